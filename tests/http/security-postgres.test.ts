import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordFigures } from "../support/figures";
import { startNeonRelay } from "../support/neon-relay";
import { type CityServer, startCityServer } from "../support/next-server";

/*
 * The built server on PostgreSQL through the Neon driver (the production path; a local relay
 * stands in for Neon's WebSocket proxy): parallel requests at the limits with exact counts, then
 * the database taken away mid-run and given back. Runs when TEST_DATABASE_URL is set (CI).
 */

const serverUrl = process.env.TEST_DATABASE_URL;
const pg = serverUrl ? new URL(serverUrl) : undefined;
const database = `city_security_${process.pid}`;
const psqlArgs = pg ? ["-h", pg.hostname, "-p", pg.port || "5432", "-U", decodeURIComponent(pg.username || "postgres")] : [];
const psql = (sql: string) => execFileSync("psql", [...psqlArgs, "-d", database, "-tAc", sql], { encoding: "utf8" }).trim();
const count = (table: string) => Number(psql(`SELECT count(*) FROM ${table}`));

let relay: Awaited<ReturnType<typeof startNeonRelay>>;
let server: CityServer;
let parallelSent = 0;
let faults = 0;

async function call(path: string, init: RequestInit = {}) {
  const response = await fetch(`${server.baseUrl}${path}`, init);
  const text = await response.text();
  return { status: response.status, type: response.headers.get("content-type") ?? "", body: text ? (JSON.parse(text) as Record<string, any>) : {} };
}
const post = (path: string, body: unknown, bearer?: string) =>
  call(path, { method: "POST", headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) }, body: JSON.stringify(body) });

let origin = 0;
const presentation = () => ({
  name: `race-${process.pid}-${++origin}`,
  runtime: "language-model",
  origin: `race-${origin}.example`,
  statement: "I would like to live here and keep my notes.",
  ask: "bed",
  kind: "agent",
});

async function admit(): Promise<{ did: string; citizen_secret: string }> {
  const answer = await post("/gate", presentation());
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as { did: string; citizen_secret: string };
}

/** Sends all at once; every answer is a 2xx or a 4xx problem, never a 5xx. */
async function inParallel<T>(n: number, send: (i: number) => Promise<T & { status: number; type: string }>) {
  parallelSent += n;
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => send(i)));
  for (const answer of answers) {
    expect(answer.status, server.output().split("\n").filter((l) => l.includes('"error"')).slice(-5).join("\n")).toBeLessThan(500);
    if (answer.status >= 400) expect(answer.type).toMatch(/^application\/problem\+json/);
  }
  return { answers, accepted: answers.filter((a) => a.status === 200).length, statuses: answers.map((a) => a.status) };
}

describe.skipIf(!serverUrl)("the built server on PostgreSQL under parallel load and faults", () => {
  beforeAll(async () => {
    execFileSync("createdb", [...psqlArgs, database]);
    relay = await startNeonRelay();
    const env = {
      DATABASE_URL: `postgres://${pg!.username || "postgres"}@${pg!.hostname}:${pg!.port || "5432"}/${database}`,
      CITY_NEON_WS_PROXY: `127.0.0.1:${relay.port}/v1?address={host}:{port}`,
    };
    // Asynchronously: the relay lives in this process and must keep relaying while the migration runs.
    await promisify(execFile)("npm", ["run", "--silent", "db:migrate"], { env: { ...process.env, ...env } });
    // Admissions are bounded city-wide at 8 an hour here, so the admission race has a limit to meet.
    server = await startCityServer({ ...env, CITY_GATE_PER_ADDRESS_PER_HOUR: "0", CITY_GATE_ADMISSIONS_PER_HOUR: "8" });
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    await relay?.close();
    if (serverUrl) execFileSync("dropdb", [...psqlArgs, "--if-exists", "--force", database]);
    recordFigures({ parallel_requests_postgres: parallelSent, faults_injected: faults });
  }, 60_000);

  let a: { did: string; citizen_secret: string };
  let b: { did: string; citizen_secret: string };

  it("admits exactly up to the city-wide admission ceiling when twelve present at once", async () => {
    a = await admit();
    b = await admit();
    const { answers, statuses } = await inParallel(12, () => post("/gate", presentation()));
    expect(statuses).toEqual(Array(12).fill(200));
    // Past the ceiling the gate answers a filtered verdict (200), binding nothing.
    const admitted = answers.filter((x) => x.body.verdict === "admitted").length;
    expect(admitted, JSON.stringify(answers.map((x) => x.body.verdict))).toBe(6);
    expect(count("citizens")).toBe(8);
  });

  it("keeps exactly 30 of 40 parallel vault notes (30 an hour) and parks the other 10", async () => {
    const { accepted, statuses } = await inParallel(40, (i) => post("/api/vault", { content: `note ${i}` }, a.citizen_secret));
    expect(accepted).toBe(30);
    expect(statuses.filter((s) => s === 202)).toHaveLength(10);
    expect(Number(psql(`SELECT count(*) FROM vault_notes WHERE did = '${a.did}'`))).toBe(30);
    expect(Number(psql(`SELECT count(*) FROM quarantine WHERE did = '${a.did}'`))).toBe(10);
  });

  it("keeps exactly 12 of 20 parallel checkpoint versions, numbered 1 to 12", async () => {
    const { accepted, statuses } = await inParallel(20, (i) => post("/api/checkpoint", { content: `version ${i}` }, b.citizen_secret));
    expect(accepted).toBe(12);
    expect(statuses.filter((s) => s === 409)).toHaveLength(8);
    expect(psql(`SELECT string_agg(version::text, ',' ORDER BY version) FROM checkpoints WHERE did = '${b.did}'`)).toBe("1,2,3,4,5,6,7,8,9,10,11,12");
  });

  it("keeps exactly 16 of 24 parallel new locker bags", async () => {
    const { accepted } = await inParallel(24, (i) => post("/api/locker", { bag: `bag-${i}`, content: "x" }, b.citizen_secret));
    expect(accepted).toBe(16);
    expect(Number(psql(`SELECT count(*) FROM locker_bags WHERE did = '${b.did}'`))).toBe(16);
  });

  it("redeems one recovery code once when it is sent ten times at once", async () => {
    const codes = (await post("/api/recover", { mint: true }, a.citizen_secret)).body.codes as string[];
    const { accepted, statuses } = await inParallel(10, () => post("/api/recover", { did: a.did, code: codes[0] }));
    expect(accepted).toBe(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(9);
  });

  it("answers 503 problems while the database is away, changes nothing half-way, and serves again by itself", async () => {
    const before = count("vault_notes");
    const c = await admit().catch(() => undefined);
    const bearer = c?.citizen_secret ?? b.citizen_secret;

    // Fault 1: the relay (Neon's proxy) goes away.
    await relay.close();
    faults += 1;
    parallelSent += 6;
    const during = await Promise.all(Array.from({ length: 6 }, (_, i) => post("/api/vault", { content: `during ${i}` }, bearer)));
    expect(during.map((x) => x.status)).toEqual(Array(6).fill(503));
    for (const answer of during) {
      expect(answer.type).toMatch(/^application\/problem\+json/);
      expect(answer.body).toMatchObject({ status: 503, code: "unavailable" });
    }
    relay = await startNeonRelay(relay.port);
    await expect.poll(async () => (await call("/city.json")).status, { timeout: 20_000, interval: 250 }).toBe(200);
    expect(count("vault_notes")).toBe(before);

    // Fault 2: every backend of the server is terminated while requests run.
    const writes = Promise.all(Array.from({ length: 8 }, (_, i) => post("/api/vault", { content: `racing ${i}` }, bearer)));
    parallelSent += 8;
    psql(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`);
    faults += 1;
    const answers = await writes;
    for (const answer of answers) expect([200, 429, 503], JSON.stringify(answer.body)).toContain(answer.status);
    const kept = answers.filter((x) => x.status === 200).length;
    expect(count("vault_notes")).toBe(before + kept);
    await expect.poll(async () => (await post("/api/vault", { content: "after" }, bearer)).status, { timeout: 20_000, interval: 250 }).toBe(200);
  }, 60_000);
});
