import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { doorPaths } from "@/lib/doors/door";
import { registry } from "@/lib/doors/registry";
import { BOOT_HOOK_TIMEOUT_MS, type CityServer, startCityServer } from "../../support/next-server";

// The door policy's directives, pinned here rather than read from the constant it is built from:
// a door's answer loads nothing, is framed by nobody, and posts no form anywhere.
const DOOR_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/*
 * Request ids, nosniff, CORS, CSP and access lines on a real `next start` of its own (its output is
 * read). Generated from the registry: a new door is covered without new code here.
 */

let server: CityServer;
const CLIENT_ID = "client-chosen-id-123";
const ELSEWHERE = "https://elsewhere.example";
/** Sent as a Bearer on MCP and A2A calls: it must never reach a log line. */
const FAKE_BEARER = `never-logged-${process.pid}-${Date.now()}`;
/** Every request id seen, with what it answered: each is fresh and gets exactly one access line. */
const answers = new Map<string, { where: string; method: string; status: number }>();

beforeAll(async () => {
  server = await startCityServer({ CITY_GATE_PER_ADDRESS_PER_HOUR: "1000" });
}, BOOT_HOOK_TIMEOUT_MS);

afterAll(async () => {
  await server?.stop();
}, 30_000);

/** One request with a client-chosen X-Request-Id; the answer must carry a fresh one of its own, and nosniff. */
async function send(path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Response> {
  const response = await fetch(`${server.baseUrl}${path}`, { ...init, headers: { "x-request-id": CLIENT_ID, ...init.headers } });
  // The answer is read whole here (its access line is written when it ends); the caller gets a copy to read.
  const copy = response.clone();
  await response.arrayBuffer();
  const where = `${init.method ?? "GET"} ${path} -> ${response.status}`;
  const id = response.headers.get("x-request-id");
  expect(id, where).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  expect(answers.has(id!), `${where}: request id ${id} seen twice`).toBe(false);
  expect(response.headers.get("x-content-type-options"), where).toBe("nosniff");
  expect(response.headers.get("access-control-allow-credentials"), where).toBeNull();
  expect(response.status, where).toBeLessThan(500);
  answers.set(id!, { where, method: init.method ?? "GET", status: response.status });
  return copy;
}

const preflight = (path: string, method: string, headers = "authorization, content-type") =>
  send(path, { method: "OPTIONS", headers: { origin: ELSEWHERE, "access-control-request-method": method, "access-control-request-headers": headers } });

/** The access lines of the server so far, by request id. */
function accessLines(): Map<string, Record<string, unknown>[]> {
  const byId = new Map<string, Record<string, unknown>[]>();
  for (const text of server.output().split("\n")) {
    if (!text.startsWith("{")) continue;
    const line = JSON.parse(text) as Record<string, unknown>;
    if (line.msg !== "answer") continue;
    byId.set(String(line.request_id), [...(byId.get(String(line.request_id)) ?? []), line]);
  }
  return byId;
}

async function expectOneAccessLineEach(ids: string[], door?: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 200));
  const lines = accessLines();
  for (const id of ids) {
    const seen = answers.get(id)!;
    expect(lines.get(id), `${seen.where}: access lines`).toHaveLength(1);
    const line = lines.get(id)![0]!;
    expect(line, seen.where).toMatchObject({ request_id: id, method: seen.method, status: seen.status, ...(door ? { door } : {}) });
    expect(line.duration_ms, seen.where).toEqual(expect.any(Number));
    expect(Object.keys(line).sort(), seen.where).toEqual(["door", "duration_ms", "level", "method", "msg", "request_id", "status", "time"]);
  }
}

const isPublic = (auth: string) => auth === "none" || auth === "optional";
/** A door path with its parameters filled in. */
const concrete = (path: string) => path.replace(/\{[a-z_]+\}/g, "x");

describe("every door, at every address", () => {
  // One test per door (its addresses, a preflight and its own method each), so that each has the
  // time limit of its own few requests: one test of every door took 5.5 s alone, over 30 s on a
  // loaded machine. The access lines of them all are checked once, in the last test.
  const ids: string[] = [];
  for (const door of registry) {
    it(`${door.name}: answers a preflight and its own method with a fresh request id and nosniff, grants CORS only if public, never passes the proxy`, async () => {
      for (const path of doorPaths(door).map(concrete)) {
        const where = `${door.name} at ${path}`;
        const pre = await preflight(path, door.method);
        ids.push(pre.headers.get("x-request-id")!);
        expect(pre.status, where).toBe(204);
        // The proxy would have set the page policy: a door's answer keeps the configured one.
        expect(pre.headers.get("content-security-policy"), where).toBe(DOOR_POLICY);
        if (isPublic(door.auth)) {
          expect(pre.headers.get("access-control-allow-origin"), where).toBe("*");
          expect(pre.headers.get("access-control-allow-methods"), where).toContain(door.method);
          expect(pre.headers.get("access-control-allow-headers"), where).toContain("Authorization");
        } else {
          expect(pre.headers.get("access-control-allow-origin"), where).toBeNull();
        }
        // The door's own method, with no credential; a body-carrying method gets a body no door accepts,
        // so nothing is written. The one door that spends is left alone.
        if (door.spends) continue;
        const body =
          door.method === "GET" || door.method === "DELETE" ? {} : { body: "not json", headers: { "content-type": "text/plain", origin: ELSEWHERE } };
        const own = await send(path, { method: door.method, headers: { origin: ELSEWHERE }, ...body });
        ids.push(own.headers.get("x-request-id")!);
        expect(own.headers.get("content-security-policy"), where).toBe(DOOR_POLICY);
        expect(own.headers.get("access-control-allow-origin"), where).toBe(isPublic(door.auth) ? "*" : null);
        if (isPublic(door.auth)) expect(own.headers.get("access-control-expose-headers"), where).toContain("X-Request-Id");
      }
    });
  }

  it("wrote exactly one access line for each of the answers above", async () => {
    expect(ids.length).toBeGreaterThan(registry.length);
    await expectOneAccessLineEach(ids);
  });

  it("answers a method a path does not serve with a 405 problem that carries a request id and an access line", async () => {
    const response = await send("/city.json", { method: "DELETE" });
    expect(response.status).toBe(405);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    expectClockFirst(await response.json());
    await expectOneAccessLineEach([response.headers.get("x-request-id")!], "read-census");
  });
});

describe("the MCP door and the A2A bridge", () => {
  const mcpHeaders = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    origin: ELSEWHERE,
    authorization: `Bearer ${FAKE_BEARER}`,
  };
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "headers-test", version: "1" } },
  });

  for (const path of ["/mcp", "/api/mcp"]) {
    it(`at ${path}: grants any origin (no credentials), exposes the MCP headers, and logs one line per answer without body or credential`, async () => {
      const pre = await preflight(path, "POST", "authorization, content-type, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name");
      expect(pre.status).toBe(204);
      expect(pre.headers.get("access-control-allow-origin")).toBe("*");
      expect(pre.headers.get("access-control-allow-methods")).toBe("POST");
      for (const header of ["Authorization", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name"]) {
        expect(pre.headers.get("access-control-allow-headers")).toContain(header);
      }
      const ids = [pre.headers.get("x-request-id")!];
      for (const body of [initialize, JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }), "{"]) {
        const answer = await send(path, { method: "POST", headers: mcpHeaders, body });
        expect(answer.headers.get("access-control-allow-origin")).toBe("*");
        for (const header of ["X-Request-Id", "Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate"]) {
          expect(answer.headers.get("access-control-expose-headers")).toContain(header);
        }
        ids.push(answer.headers.get("x-request-id")!);
      }
      const refused = await send(path, { method: "GET", headers: { accept: "text/event-stream" } });
      expect(refused.status).toBe(405);
      ids.push(refused.headers.get("x-request-id")!);
      await expectOneAccessLineEach(ids, "mcp");
      expect(server.output()).not.toContain(FAKE_BEARER);
      expect(server.output()).not.toContain("headers-test");
    });
  }

  it("A2A: grants any origin on its JSON-RPC, and logs one line per answer without body or credential", async () => {
    const pre = await preflight("/api/a2a", "POST", "authorization, content-type, a2a-version");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-headers")).toContain("A2A-Version");
    const ids = [pre.headers.get("x-request-id")!];
    const headers = { "content-type": "application/json", origin: ELSEWHERE, authorization: `Bearer ${FAKE_BEARER}` };
    for (const body of ["{", JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "no-such-task-headers-test" } })]) {
      const answer = await send("/api/a2a", { method: "POST", headers, body });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("access-control-allow-origin")).toBe("*");
      ids.push(answer.headers.get("x-request-id")!);
    }
    const refused = await send("/api/a2a", { method: "PUT", headers, body: "{}" });
    expect(refused.status).toBe(405);
    ids.push(refused.headers.get("x-request-id")!);
    await expectOneAccessLineEach(ids, "a2a");
    expect(server.output()).not.toContain(FAKE_BEARER);
    expect(server.output()).not.toContain("no-such-task-headers-test");
  });

  it("an /api path no door serves: the preflight and the 404 problem carry a request id, a CORS grant and an access line", async () => {
    const pre = await preflight("/api/no-such-door/deeper", "GET");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    const missing = await send("/api/no-such-door/deeper", { headers: { origin: ELSEWHERE } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("access-control-allow-origin")).toBe("*");
    expectClockFirst(await missing.json());
    await expectOneAccessLineEach([pre.headers.get("x-request-id")!, missing.headers.get("x-request-id")!], "not-found");
  });
});

describe("pages", () => {
  it("carry a CSP with a fresh nonce on every script, no inline style or unsafe source, and a fresh request id", async () => {
    const nonces = new Set<string>();
    for (const [path, status] of [
      ["/", 200],
      ["/peers", 200],
      ["/ward", 200],
      ["/log", 200],
      ["/doors", 200],
      ["/no-such-page", 404],
    ] as const) {
      const response = await fetch(`${server.baseUrl}${path}`, { headers: { "x-request-id": CLIENT_ID } });
      const html = await response.text();
      expect(response.status, path).toBe(status);
      expect(response.headers.get("x-request-id"), path).toMatch(/^[0-9a-f-]{36}$/);
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      const csp = response.headers.get("content-security-policy") ?? "";
      const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
      expect(nonce, `${path}: ${csp}`).toBeTruthy();
      nonces.add(nonce!);
      expect(csp, path).toContain(`script-src 'self' 'nonce-${nonce}' 'strict-dynamic'`);
      expect(csp, path).toContain("style-src 'self';");
      expect(csp, path).not.toMatch(/unsafe-(inline|eval|hashes)/);
      for (const directive of ["default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"]) expect(csp, path).toContain(directive);
      const scripts = html.match(/<script\b[^>]*>/g) ?? [];
      expect(scripts.length, path).toBeGreaterThan(0);
      for (const tag of scripts) expect(tag, path).toContain(`nonce="${nonce}"`);
      expect(html, path).not.toMatch(/<style\b|\sstyle="/);
    }
    expect(nonces.size).toBe(6);
  });
});

/** A problem document carries the city's clock first, as every JSON answer does (now, give or take a minute). */
function expectClockFirst(problem: Record<string, unknown>): void {
  expect(Object.keys(problem)[0]).toBe("now_utc");
  expect(Math.abs(Date.parse(String(problem.now_utc)) - Date.now())).toBeLessThan(60_000);
}
