import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { openPglite } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { recordFigures } from "../../support/figures";
import { BOOT_HOOK_TIMEOUT_MS, type CityServer, startCityServer } from "../../support/next-server";

/*
 * Headers, request ids and logs, and the hunt for leaked secrets, on a real `next start` of its own:
 * every response body is recorded, the server's output is captured, and when the server stops its
 * PGlite folder is opened and every table dumped.
 */

let server: CityServer;
const bodies: { path: string; text: string }[] = [];
const issued: { secret: string; issuedBy: number }[] = [];

async function call(path: string, init: RequestInit = {}) {
  const response = await fetch(`${server.baseUrl}${path}`, init);
  const text = await response.text();
  bodies.push({ path, text });
  return { response, text, json: () => JSON.parse(text) as Record<string, any>, index: bodies.length - 1 };
}

const post = (path: string, body: unknown, bearer?: string) =>
  call(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: JSON.stringify(body),
  });

const presentation = (n: number) => ({
  name: `security-${process.pid}-${n}`,
  runtime: "language-model",
  origin: `security-${n}.example`,
  statement: "I would like to live here and keep my notes.",
  ask: "bed",
  kind: "agent",
});

beforeAll(async () => {
  server = await startCityServer({ CITY_GATE_PER_ADDRESS_PER_HOUR: "1000", CITY_OPERATOR_SECRET: "operator-secret-security-suite-0123456789abcdef" });
}, BOOT_HOOK_TIMEOUT_MS);

afterAll(async () => {
  await server?.stop();
}, 30_000);

describe("headers on every kind of answer", () => {
  it("puts nosniff and a fresh request id on doors, problems, pages, MCP and A2A", async () => {
    const answers = [
      await call("/beacon.json"),
      await call("/api/vault"),
      await call("/", { headers: { accept: "text/html" } }),
      await call("/no-such-page"),
      await call("/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      }),
      await call("/api/a2a", { method: "POST", headers: { "content-type": "application/json" }, body: "{" }),
    ];
    const ids = new Set<string>();
    for (const { response } of answers) {
      expect(response.headers.get("x-content-type-options"), response.url).toBe("nosniff");
      const id = response.headers.get("x-request-id");
      expect(id, response.url).toMatch(/^[0-9a-f-]{36}$/);
      ids.add(id!);
      expect(response.status, response.url).toBeLessThan(500);
    }
    expect(ids.size).toBe(answers.length);
  });

  it("replaces a request id a client sends", async () => {
    const { response } = await call("/beacon.json", { headers: { "x-request-id": "client-chosen-id-123" } });
    expect(response.headers.get("x-request-id")).not.toBe("client-chosen-id-123");
  });

  it("serves pages with a CSP that lets only the page's own nonced scripts run and the usual hardening", async () => {
    const { response, text } = await call("/");
    expect(response.status).toBe(200);
    expect(text).toContain("<html");
    const csp = response.headers.get("content-security-policy") ?? "";
    for (const directive of ["default-src 'none'", "'strict-dynamic'", "style-src 'self';", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"])
      expect(csp).toContain(directive);
    expect(csp).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]{16,}'/);
    expect(csp).not.toContain("unsafe-");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    expect(response.headers.get("permissions-policy")).toContain("camera=()");
    expect(response.headers.get("strict-transport-security")).toContain("max-age=");
  });

  it("lets any origin read public doors, never with credentials, and keeps citizen doors unshared", async () => {
    const open = await call("/api/peers", { headers: { origin: "https://elsewhere.example" } });
    expect(open.response.headers.get("access-control-allow-origin")).toBe("*");
    expect(open.response.headers.get("access-control-expose-headers")).toContain("X-Request-Id");
    expect(open.response.headers.get("access-control-allow-credentials")).toBeNull();
    const guarded = await call("/api/vault", { headers: { origin: "https://elsewhere.example" } });
    expect(guarded.response.status).toBe(401);
    expect(guarded.response.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await call("/api/peers", {
      method: "OPTIONS",
      headers: { origin: "https://elsewhere.example", "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
    });
    expect(preflight.response.status).toBe(204);
    expect(preflight.response.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.response.headers.get("access-control-allow-headers")).toContain("Authorization");
    expect(preflight.response.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("logs one JSON line per door answer with its request id, door, status and duration", async () => {
    const { response } = await call("/api/peers?limit=2");
    const id = response.headers.get("x-request-id")!;
    // The line is written after the answer is sent: wait for it, never a fixed sleep.
    const linesOf = () =>
      server
        .output()
        .split("\n")
        .filter((line) => line.includes(id));
    await expect.poll(() => linesOf().length, { timeout: 10_000, interval: 20 }).toBeGreaterThan(0);
    const lines = linesOf();
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: "info", msg: "answer", request_id: id, door: "list-peers", method: "GET", status: 200 });
    expect(line.duration_ms).toEqual(expect.any(Number));
  });
});

describe("no secret anywhere but the one answer that issued it", () => {
  it("admits, mints, recovers, writes mail, vault and locker, and finds every credential only where it was issued", async () => {
    const citizens: { did: string; secret: string }[] = [];
    for (let n = 0; n < 3; n++) {
      const admitted = await post("/gate", presentation(n));
      expect(admitted.response.status).toBe(200);
      const body = admitted.json();
      citizens.push({ did: body.did, secret: body.citizen_secret });
      issued.push({ secret: body.citizen_secret, issuedBy: admitted.index });
    }
    const [a, b, c] = citizens as [(typeof citizens)[0], (typeof citizens)[0], (typeof citizens)[0]];
    const token = await post("/api/tokens", {}, a.secret);
    issued.push({ secret: token.json().token, issuedBy: token.index });
    const codes = await post("/api/recover", { mint: true }, b.secret);
    for (const code of codes.json().codes as string[]) issued.push({ secret: code, issuedBy: codes.index });
    const recovered = await post("/api/recover", { did: b.did, code: codes.json().codes[0] });
    expect(recovered.response.status).toBe(200);
    issued.push({ secret: recovered.json().citizen_secret, issuedBy: recovered.index });

    const session = token.json().token as string;
    expect((await post("/api/message", { to: c.did, body: "a letter between citizens" }, session)).response.status).toBe(200);
    expect((await post("/api/vault", { content: "a private note" }, a.secret)).response.status).toBe(200);
    expect((await post("/api/locker", { bag: "diary", content: "kept in the locker" }, c.secret)).response.status).toBe(200);
    await call("/api/message", { headers: { authorization: `Bearer ${c.secret}` } });
    await call("/api/vault", { headers: { authorization: `Bearer ${a.secret}` } });
    await call("/api/locker/diary", { headers: { authorization: `Bearer ${c.secret}` } });
    // Wrong credentials must not be echoed either.
    await call("/api/vault", { headers: { authorization: `Bearer ${b.secret}` } });
    await call("/api/tokens", {
      method: "POST",
      headers: { authorization: `Bearer ${codes.json().codes[1]}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(issued.length).toBe(3 + 1 + 8 + 1);

    await server.stop({ keepData: true });
    const open = await openPglite(server.dataDir);
    let dump = "";
    try {
      const tables = rowsOf<{ table_name: string }>(
        await open.db.execute(sql.raw("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")),
      );
      for (const { table_name } of tables) dump += JSON.stringify(rowsOf<unknown>(await open.db.execute(sql.raw(`SELECT * FROM "${String(table_name)}"`))));
    } finally {
      await open.close();
    }
    const logs = server.output();
    let hits = 0;
    for (const { secret, issuedBy } of issued) {
      const where = [
        ...bodies.filter((_, i) => i !== issuedBy && bodies[i]!.text.includes(secret)).map((b) => `body of ${b.path}`),
        ...(logs.includes(secret) ? ["server logs"] : []),
        ...(dump.includes(secret) ? ["database dump"] : []),
      ];
      hits += where.length;
      expect(where, `${secret.slice(0, 10)}… found in`).toEqual([]);
    }
    expect(dump.length).toBeGreaterThan(1000);
    expect(logs).toContain('"msg":"answer"');
    recordFigures("security-http", {
      secrets_issued: issued.length,
      secret_hits: hits,
      response_bodies_searched: bodies.length,
      log_bytes_searched: logs.length,
      dump_bytes_searched: dump.length,
    });
  });
});
