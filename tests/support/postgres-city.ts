import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject } from "vitest";
import { describeMissingServer } from "./databases";
import { recordFigures } from "./figures";
import { presentation } from "./gate";
import { startNeonRelay } from "./neon-relay";
import { BOOT_HOOK_TIMEOUT_MS, type CityServer, startCityServer } from "./next-server";

/*
 * The built server (`next start`) on a fresh PostgreSQL database reached through the Neon driver
 * (the production path; a local relay stands in for Neon's WebSocket proxy), for the HTTP proofs
 * that race the limits. Each file gets a server and a database of its own; the database is read
 * directly (one node-postgres connection of the file's own, not the server's) to check that stored
 * rows match the answers.
 */

/** Set in CI: the PostgreSQL server the proofs create their databases on (an empty value is unset). */
export const postgresUrl = process.env.TEST_DATABASE_URL || undefined;

/**
 * A suite of the built server on PostgreSQL: runs when TEST_DATABASE_URL is set; without it the
 * same rule as the in-process suites (describeMissingServer): a failure in CI, a skip named for
 * its reason elsewhere.
 */
export function describeOnServer(name: string, suite: () => void): void {
  // The only switch of a server suite: no `describe.skipIf` of its own (which skips silently in CI).
  if (postgresUrl) describe(name, suite);
  else describeMissingServer(name);
}

export interface Answer {
  status: number;
  type: string;
  headers: Headers;
  body: Record<string, any>;
}

export interface Admitted {
  did: string;
  citizen_secret: string;
}

/** Parallel answers sorted out: accepted (200/201), parked (202) and refused (4xx) always add up to sent. */
export interface Race {
  answers: Answer[];
  statuses: number[];
  accepted: number;
  parked: number;
  refused: number;
}

export interface PostgresCity {
  server: CityServer;
  database: string;
  /** The environment that points a server at this database (DATABASE_URL and the Neon relay), for a second instance. */
  databaseEnv: Record<string, string>;
  /**
   * SQL run directly on the server's database (several statements: the last one's rows); its rows
   * as text, as `psql -tA` prints them: columns joined by `|`, rows by newlines, NULL empty (a
   * statement without rows, an UPDATE, gives "", not psql's command tag). Throws on an SQL error.
   */
  psql: (sql: string) => Promise<string>;
  /** Rows of a table, optionally only those matching a WHERE clause. */
  count: (table: string, where?: string) => Promise<number>;
  /** Backends of this database waiting for a lock right now (the file's own reading connection never is). */
  lockWaiters: () => Promise<number>;
  call: (path: string, init?: RequestInit) => Promise<Answer>;
  get: (path: string, bearer?: string) => Promise<Answer>;
  post: (path: string, body: unknown, bearer?: string) => Promise<Answer>;
  /** A new citizen through the gate (a fresh name), or fails the test. */
  admit: () => Promise<Admitted>;
  /** Sends n requests at once: never a 5xx, a problem document for every 4xx. */
  race: (n: number, send: (i: number) => Promise<Answer>) => Promise<Race>;
  /** Takes Neon's proxy (the relay) away, and brings it back on the same port. */
  stopRelay: () => Promise<void>;
  startRelay: () => Promise<void>;
  /** Figures this file adds to the run's security figures (tests/support/figures.ts). */
  figures: { parallel_requests_postgres: number; faults_injected: number };
}

/**
 * Registers the hooks that start the city for the surrounding describe block and stop it after.
 * `fragment` names this file's figures; `env` is added to the server's environment (a function is
 * called when the server starts, after the hooks registered before this one ran).
 */
export function usePostgresCity(fragment: string, env: Record<string, string> | (() => Record<string, string>) = {}): () => PostgresCity {
  const postgresAt = new URL(postgresUrl ?? "postgres://postgres@127.0.0.1:5432/postgres");
  const database = `city_${fragment.replace(/\W/g, "_")}_${process.pid}_${randomBytes(3).toString("hex")}`;
  const psqlArgs = ["-h", postgresAt.hostname, "-p", postgresAt.port || "5432", "-U", decodeURIComponent(postgresAt.username || "postgres")];
  // One connection for the file's own reads (a backend started once, not a psql per statement): one
  // only, so a test that ends every other backend of the database (pid <> pg_backend_pid()) ends
  // none of it; every value as PostgreSQL's text (no parser), as psql prints it.
  let reader: pg.Pool | undefined;
  const psql = async (sql: string) => {
    if (!reader) throw new Error("the PostgreSQL city is not running");
    // Several statements (the simple protocol, no parameters) answer a result each: the last one's rows.
    const answer = (await reader.query({ text: sql, rowMode: "array" })) as pg.QueryResult<unknown[]> | pg.QueryResult<unknown[]>[];
    const last: pg.QueryResult<unknown[]> = Array.isArray(answer) ? answer.at(-1)! : answer;
    return last.rows
      .map((row) => row.map((value) => (value === null ? "" : String(value))).join("|"))
      .join("\n")
      .trim();
  };
  const figures = { parallel_requests_postgres: 0, faults_injected: 0 };
  let relay: Awaited<ReturnType<typeof startNeonRelay>> | undefined;
  let city: PostgresCity | undefined;

  beforeAll(async () => {
    // A copy of the run's migrated template (tests/support/database-template.ts) when there is one:
    // `npm run db:migrate` costs seconds of CPU per file, and the deploy check runs it for real.
    const template = inject("serverTemplate");
    execFileSync("createdb", [...psqlArgs, ...(template ? ["-T", template] : []), database]);
    reader = new pg.Pool({
      host: postgresAt.hostname,
      port: Number(postgresAt.port || "5432"),
      user: decodeURIComponent(postgresAt.username || "postgres"),
      database,
      max: 1,
      idleTimeoutMillis: 0,
      types: { getTypeParser: () => (value: string) => value },
    });
    // A connection ended under the pool (an idle one) is dropped and opened again on the next read.
    reader.on("error", () => {});
    await reader.query("SELECT 1");
    relay = await startNeonRelay();
    const port = relay.port;
    const databaseEnv = {
      DATABASE_URL: `postgres://${postgresAt.username || "postgres"}@${postgresAt.hostname}:${postgresAt.port || "5432"}/${database}`,
      CITY_NEON_WS_PROXY: `127.0.0.1:${port}/v1?address={host}:{port}`,
    };
    if (!template) {
      // Asynchronously: the relay lives in this process and must keep relaying while the migration runs.
      await promisify(execFile)("npm", ["run", "--silent", "db:migrate"], { env: { ...process.env, ...databaseEnv } });
    }
    // Every request comes from 127.0.0.1 and most presentations from one origin: the flood limits
    // of the gate have their own tests; here only the limit under test binds.
    const server = await startCityServer({
      CITY_GATE_PER_ADDRESS_PER_HOUR: "0",
      CITY_GATE_PER_ORIGIN_PER_HOUR: "100000",
      // One network (127.0.0.0/24) for every request: no per-network share binds unless a test sets one (issue 43).
      CITY_GATE_PER_PREFIX_PER_HOUR: "0",
      CITY_GATE_PREFIX_SHARE_PERCENT: "100",
      CITY_GATE_HOST_SHARE_PERCENT: "100",
      ...databaseEnv,
      ...(typeof env === "function" ? env() : env),
    });

    const call = async (path: string, init: RequestInit = {}): Promise<Answer> => {
      const response = await fetch(`${server.baseUrl}${path}`, init);
      const text = await response.text();
      const type = response.headers.get("content-type") ?? "";
      return {
        status: response.status,
        type,
        headers: response.headers,
        body: text && type.includes("json") ? (JSON.parse(text) as Record<string, any>) : { text },
      };
    };
    const auth = (bearer?: string): Record<string, string> => (bearer ? { authorization: `Bearer ${bearer}` } : {});
    const post = (path: string, body: unknown, bearer?: string) =>
      call(path, { method: "POST", headers: { "content-type": "application/json", ...auth(bearer) }, body: JSON.stringify(body) });

    city = {
      server,
      database,
      databaseEnv,
      psql,
      count: async (table, where) => Number(await psql(`SELECT count(*) FROM ${table}${where ? ` WHERE ${where}` : ""}`)),
      lockWaiters: async () => Number(await psql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")),
      call,
      get: (path, bearer) => call(path, { headers: auth(bearer) }),
      post,
      admit: async () => {
        const answer = await post("/gate", presentation());
        expect(answer.body.verdict, JSON.stringify(answer.body)).toBe("admitted");
        return answer.body as Admitted;
      },
      race: async (n, send) => {
        figures.parallel_requests_postgres += n;
        const answers = await Promise.all(Array.from({ length: n }, (_, i) => send(i)));
        for (const answer of answers) {
          const recentErrors = server
            .output()
            .split("\n")
            .filter((line) => line.includes('"error"'))
            .slice(-5)
            .join("\n");
          expect(answer.status, recentErrors).toBeLessThan(500);
          if (answer.status >= 400) expect(answer.type).toMatch(/^application\/problem\+json/);
        }
        const statuses = answers.map((a) => a.status);
        const accepted = statuses.filter((s) => s === 200 || s === 201).length;
        const parked = statuses.filter((s) => s === 202).length;
        const refused = statuses.filter((s) => s >= 400).length;
        expect(accepted + parked + refused, `statuses: ${statuses.join(",")}`).toBe(n);
        return { answers, statuses, accepted, parked, refused };
      },
      stopRelay: async () => {
        await relay?.close();
        relay = undefined;
      },
      startRelay: async () => {
        relay = await startNeonRelay(port);
      },
      figures,
    };
  }, BOOT_HOOK_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    await city?.server.stop();
    await relay?.close();
    await reader?.end();
    reader = undefined;
    execFileSync("dropdb", [...psqlArgs, "--if-exists", "--force", database]);
    recordFigures(fragment, figures);
  }, 60_000);

  return () => {
    if (!city) throw new Error("the PostgreSQL city is not running");
    return city;
  };
}

/** A fresh CITY-PROVE/1 proof for this citizen: a challenge from the door, signed with a new key. */
export async function signedProof(city: PostgresCity, bearer: string, key: { publicKey: string; sign: (message: string) => Promise<string> }) {
  const { body } = await city.get("/api/prove", bearer);
  return { public_key: key.publicKey, signature: await key.sign(body.message as string), challenge: body.challenge as string };
}

/**
 * A second `next start` instance on the first one's database over node-postgres, as the other half
 * of a load balancer: the gate's flood windows off (every test request comes from one address).
 */
export function startSecondInstance(first: PostgresCity, env: Record<string, string> = {}): Promise<CityServer> {
  return startCityServer({
    ...first.databaseEnv,
    CITY_DB_DRIVER: "pg",
    CITY_GATE_PER_ADDRESS_PER_HOUR: "0",
    CITY_GATE_PER_ORIGIN_PER_HOUR: "100000",
    CITY_GATE_PER_PREFIX_PER_HOUR: "0",
    CITY_GATE_PREFIX_SHARE_PERCENT: "100",
    CITY_GATE_HOST_SHARE_PERCENT: "100",
    ...env,
  });
}

/**
 * Registers hooks that start a second instance (startSecondInstance) once the city is up, with the
 * first one's CITY_BASE_URL, and stop it after; the getter gives it to the tests.
 */
export function useSecondInstance(city: () => PostgresCity, env: Record<string, string> = {}): () => CityServer {
  let other: CityServer | undefined;
  beforeAll(async () => {
    other = await startSecondInstance(city(), { ...env, CITY_BASE_URL: city().server.baseUrl });
  }, BOOT_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await other?.stop();
  }, 30_000);
  return () => {
    if (!other) throw new Error("the second instance is not running");
    return other;
  };
}
