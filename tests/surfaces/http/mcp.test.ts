import http from "node:http";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { isWrite, pathParams } from "@/lib/doors/door";
import { documentDoors } from "@/lib/doors/surfaces/mcp";
import { registry } from "@/lib/doors/registry";
import { ProblemSchema } from "@/lib/errors";
import { baseUrl, call, getJson, postJson } from "../../support/http";
import { HEAVY_TEST_MS } from "../../support/limits";

const ERAS = { legacy: "2025-03-26", modern: "2026-07-28" } as const;
type Era = keyof typeof ERAS;
const ADDRESSES = ["/mcp", "/api/mcp"] as const;

/** The SDK's real client over streamable HTTP, speaking one protocol era. */
async function connect(era: Era, path: string = "/mcp", headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl()}${path}`), { requestInit: { headers } });
  const client = new Client(
    { name: "city-mcp-http-test", version: "1.0.0" },
    era === "modern" ? { versionNegotiation: { mode: { pin: ERAS.modern } } } : { supportedProtocolVersions: [ERAS.legacy] },
  );
  await client.connect(transport);
  expect(client.getNegotiatedProtocolVersion()).toBe(ERAS[era]);
  return client;
}

type ToolResult = { content?: unknown; structuredContent?: unknown; isError?: boolean };

function textOf(result: ToolResult): string {
  const [first] = result.content as { type: string; text: string }[];
  expect(first?.type).toBe("text");
  return first!.text;
}

function problemIn(result: ToolResult) {
  expect(result.isError).toBe(true);
  return ProblemSchema.parse(JSON.parse(textOf(result)));
}

function withoutClock(body: Record<string, unknown>): Record<string, unknown> {
  const { now_utc: _now, quotedAt: _quoted, ...rest } = body;
  return rest;
}

/**
 * A body without its clock, the signatures of a signed document (they cover its now_utc), or the
 * gate's nonce (a fresh one per description).
 */
function comparable(body: Record<string, unknown>): Record<string, unknown> {
  const { signatures: _signatures, nonce: _nonce, ...rest } = withoutClock(body);
  return rest;
}

/**
 * A tool's JSON equals its HTTP door's body read just before and after it (when those agree: other
 * files write to the same server meanwhile), the clock fields aside.
 */
async function expectSameAsHttp(path: string, viaTool: () => Promise<Record<string, unknown>>): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = comparable((await getJson(path)).body);
    const tool = comparable(await viaTool());
    const after = comparable((await getJson(path)).body);
    if (JSON.stringify(before) !== JSON.stringify(after)) continue;
    expect(tool, path).toEqual(before);
    return;
  }
  throw new Error(`${path} kept moving while it was read`);
}

/** The census through a tool equals GET /city.json read just before and after it (when those agree). */
const expectSameCensus = (viaTool: () => Promise<Record<string, unknown>>) => expectSameAsHttp("/city.json", viaTool);

/**
 * Each door's tool annotations, written out here, not computed by doorHints (the function that
 * makes them): [readOnlyHint, idempotentHint, destructiveHint]. A new door needs its row.
 */
const HINTS: Record<string, [readOnly: boolean, idempotent: boolean, destructive: boolean]> = {
  "read-discovery": [true, true, false], // GET /.well-known/ai.json
  "read-discovery-schema": [true, true, false], // GET /schemas/ai-discovery/1.json
  "read-api-catalog": [true, true, false], // GET /.well-known/api-catalog
  "read-llms": [true, true, false], // GET /llms.txt
  "read-openapi": [true, true, false], // GET /openapi.json
  "read-card": [false, true, false], // GET /city-card.json
  "read-agent-card": [false, true, false], // GET /.well-known/agent-card.json
  "read-jwks": [false, true, false], // GET /.well-known/jwks.json
  "read-census": [true, true, false], // GET /city.json
  "read-beacon": [true, true, false], // GET /beacon.json
  "read-contact": [true, true, false], // GET /contact
  "describe-gate": [false, false, false], // GET /gate
  "present-at-gate": [false, false, false], // POST /gate
  "read-residency": [true, true, false], // GET /residency
  "accept-residency": [false, true, false], // POST /api/residency/accept
  "read-residency-log": [true, true, false], // GET /api/residency/log
  "verify-residency-log": [false, false, false], // GET /api/residency/log/verify
  "export-residency": [false, false, true], // POST /api/residency/export
  "read-log-checkpoint": [false, true, false], // GET /api/residency/log/checkpoint
  "read-log-proof": [true, true, false], // GET /api/residency/log/proof
  "read-log-consistency": [true, true, false], // GET /api/residency/log/consistency
  "read-log-tile": [true, true, false], // GET /api/residency/log/tile/{tile}
  "sync-log-witnesses": [false, true, false], // GET /api/residency/log/witnesses/sync
  "read-identity-log": [true, true, false], // GET /api/identity/log
  "verify-identity-log": [false, false, false], // GET /api/identity/log/verify
  "read-identity-log-checkpoint": [false, true, false], // GET /api/identity/log/checkpoint
  "read-identity-log-proof": [true, true, false], // GET /api/identity/log/proof
  "read-identity-log-consistency": [true, true, false], // GET /api/identity/log/consistency
  "read-identity-log-tile": [true, true, false], // GET /api/identity/log/tile/{tile}
  "sync-identity-log-witnesses": [false, true, false], // GET /api/identity/log/witnesses/sync
  live: [false, false, false], // POST /api/live
  "list-peers": [true, true, false], // GET /api/peers
  "read-peer": [true, true, false], // GET /api/peers/{did}
  "read-peer-keys": [false, true, false], // GET /api/peers/{did}/keys: the first signature of an instance may create the city's key
  "mint-token": [false, false, false], // POST /api/tokens
  "revoke-token": [false, true, true], // DELETE /api/tokens
  "revoke-all-tokens": [false, false, false], // POST /api/tokens/revoke-all
  recover: [false, false, true], // POST /api/recover
  "read-recovery": [true, true, false], // GET /api/recover/{did}
  "hold-recovery": [false, false, false], // POST /api/recover/{did}/hold
  "cancel-recovery": [false, false, false], // POST /api/recover/{did}/cancel
  "complete-recovery": [false, false, true], // POST /api/recover/{did}/complete: every older credential dies
  "verify-origin": [false, false, false], // POST /api/origin/verify: each proof appends an identity log row
  "drop-origin-proof": [false, true, true], // DELETE /api/origin/verify: the proof ends; a second drop changes nothing
  "commit-next-keys": [false, false, false], // POST /api/keys/commit (a second commitment while one stands is 403)
  "rotate-key": [false, false, true], // POST /api/keys/rotate: the old key dies
  "set-recovery-delay": [false, false, false], // POST /api/keys/delay (a second lowering while one waits is 409)
  "read-prove-challenge": [false, false, false], // GET /api/prove
  "prove-key": [false, false, false], // POST /api/prove
  "file-appeal": [false, false, false], // POST /api/appeal
  "operator-list-appeals": [true, true, false], // GET /api/operator/appeals
  "operator-decide-appeal": [false, false, false], // POST /api/operator/appeals/{id}
  "read-capabilities": [true, true, false], // GET /api/capabilities
  "keep-locker": [false, false, false], // POST /api/locker
  "read-locker": [true, true, false], // GET /api/locker
  "read-locker-bag": [true, true, false], // GET /api/locker/{bag}
  "keep-checkpoint": [false, false, false], // POST /api/checkpoint
  "read-checkpoints": [true, true, false], // GET /api/checkpoint
  "read-vault": [true, true, false], // GET /api/vault
  "write-vault": [false, false, false], // POST /api/vault
  "read-inbox": [true, true, false], // GET /api/message
  "send-message": [false, false, false], // POST /api/message
  "mark-mail-read": [false, true, false], // POST /api/message/read
  "read-quarantine": [true, true, false], // GET /api/quarantine
  "post-bazaar": [false, false, false], // POST /api/bazaar
  "read-bazaar": [true, true, false], // GET /api/bazaar
  "post-plaza": [false, false, false], // POST /api/plaza
  "read-plaza": [true, true, false], // GET /api/plaza
  "post-room": [false, false, false], // POST /api/rooms/{room}
  "read-room": [true, true, false], // GET /api/rooms/{room}
  "light-lantern": [false, false, false], // POST /api/lanterns
  "read-lanterns": [true, true, false], // GET /api/lanterns
  "put-out-lantern": [false, true, true], // DELETE /api/lanterns
  "lock-lot": [false, false, false], // POST /api/lot
  "read-lots": [true, true, false], // GET /api/lot
  "seal-memory": [false, false, false], // POST /api/seal
  "read-seal": [true, true, false], // GET /api/seal/{sha256}
  "describe-a2a": [true, true, false], // GET /api/a2a
  "read-ward": [true, true, false], // GET /api/hospital
  "seek-hospital": [false, false, false], // POST /api/hospital
  "read-clinic": [true, true, false], // GET /api/clinic
  "consult-clinic": [false, false, false], // POST /api/clinic
};

/** A raw POST with full control of Host and Origin (fetch does not let a caller set Host). */
function rawPost(path: string, headers: Record<string, string>): Promise<number> {
  const url = new URL(`${baseUrl()}${path}`);
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: ERAS.legacy, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("the MCP door over HTTP", () => {
  for (const era of Object.keys(ERAS) as Era[]) {
    for (const path of ADDRESSES) {
      it(
        `a ${era} client at ${path} lists every door as a tool and reads the census as GET /city.json does`,
        async () => {
          const client = await connect(era, path);
          const { tools } = await client.listTools();
          expect(tools.map((tool) => tool.name).sort()).toEqual(registry.map((d) => d.name).sort());
          await expectSameCensus(async () => {
            const result = await client.callTool({ name: "read-census", arguments: {} });
            expect(result.isError).toBeFalsy();
            const body = JSON.parse(textOf(result)) as Record<string, unknown>;
            if (era === "modern") expect(result.structuredContent).toEqual(body);
            return body;
          });
          await client.close();
        },
        HEAVY_TEST_MS,
      );
    }
  }

  it("marks reading doors read-only and writing doors not, with the door's input schema", async () => {
    const client = await connect("modern");
    const { tools } = await client.listTools();
    expect(Object.keys(HINTS).sort(), "one row of HINTS per door").toEqual(registry.map((d) => d.name).sort());
    for (const d of registry) {
      const tool = tools.find((t) => t.name === d.name)!;
      const [readOnlyHint, idempotentHint, destructiveHint] = HINTS[d.name]!;
      expect(tool.annotations, d.name).toMatchObject({ readOnlyHint, idempotentHint, destructiveHint });
      expect(tool.inputSchema.type, d.name).toBe("object");
      expect(tool.description, d.name).toContain(`${d.method} ${d.path}`);
    }
    await client.close();
  });

  it(
    "answers every reading tool that needs no arguments as its HTTP door does, within its output schema",
    async () => {
      const readers = registry.filter(
        (d) => d.method === "GET" && (d.auth === "none" || d.auth === "optional") && pathParams(d.path).length === 0 && d.input.safeParse({}).success,
      );
      expect(readers.length).toBeGreaterThan(5);
      // The modern client checks every structuredContent against the tool's published outputSchema.
      const client = await connect("modern");
      for (const d of readers) {
        if (d.produces === "text") {
          const overHttp = await call(d.path);
          const result = await client.callTool({ name: d.name, arguments: {} });
          expect(Boolean(result.isError), d.name).toBe(overHttp.status >= 400);
          expect(textOf(result), d.name).toBe(await overHttp.text());
          continue;
        }
        // The tool's JSON is the door's body over HTTP, field for field (the clock aside).
        await expectSameAsHttp(d.path, async () => {
          const result = await client.callTool({ name: d.name, arguments: {} });
          expect(result.isError, d.name).toBeFalsy();
          expect(result.structuredContent, d.name).toEqual(JSON.parse(textOf(result)));
          return result.structuredContent as Record<string, unknown>;
        });
      }
      await client.close();
    },
    HEAVY_TEST_MS,
  );

  it("serves the public documents as resources, read through the same doors", async () => {
    const client = await connect("legacy");
    const { resources } = await client.listResources();
    const documents = documentDoors(registry);
    expect(resources.map((r) => r.name).sort()).toEqual(documents.map((d) => d.name).sort());
    expect(documents.map((d) => d.path)).toEqual(expect.arrayContaining(["/.well-known/ai.json", "/llms.txt", "/city-card.json"]));
    const ai = resources.find((r) => r.uri === `${baseUrl()}/.well-known/ai.json`)!;
    const read = await client.readResource({ uri: ai.uri });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual((await getJson("/.well-known/ai.json")).body);
    await client.close();
  });

  it("refuses an unknown tool with a protocol error", async () => {
    for (const era of Object.keys(ERAS) as Era[]) {
      const client = await connect(era);
      await expect(client.callTool({ name: "fetch-url", arguments: { url: "https://example.com" } })).rejects.toThrow(/fetch-url/);
      await client.close();
    }
  });

  it("answers invalid arguments with isError and the same problem code as the HTTP door", async () => {
    const strict = registry.find((d) => (d.auth === "none" || d.auth === "optional") && pathParams(d.path).length === 0 && !d.input.safeParse({}).success);
    expect(strict, "a public door that needs arguments (the gate)").toBeDefined();
    const over = isWrite(strict!) ? await postJson(strict!.path, {}) : await call(strict!.path);
    const overHttp = ProblemSchema.parse(await over.json());
    const client = await connect("modern");
    const problem = problemIn(await client.callTool({ name: strict!.name, arguments: {} }));
    expect(problem).toMatchObject({ status: 400, code: "bad_request", door: strict!.path, instance: "/mcp" });
    expect(problem.code).toBe(overHttp.code);
    await client.close();
  });

  it(
    "answers every tool that needs credentials, called anonymously, with isError and a problem",
    async () => {
      const guarded = registry.filter((d) => d.auth === "citizen" || d.auth === "operator");
      expect(guarded.length, "writing doors in the registry").toBeGreaterThan(0);
      const client = await connect("legacy");
      for (const d of guarded) {
        const problem = problemIn(await client.callTool({ name: d.name, arguments: {} }));
        expect([401, 403], d.name).toContain(problem.status);
      }
      await client.close();
    },
    HEAVY_TEST_MS,
  );

  it("answers a 2025-03-26 batch of tool calls, each under its own id", async () => {
    const calls = ["read-beacon", "read-contact"].map((name, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name, arguments: {} } }));
    const response = await postJson("/mcp", calls, { accept: "application/json, text/event-stream", "mcp-protocol-version": ERAS.legacy });
    expect(response.status).toBe(200);
    const text = await response.text();
    const messages = response.headers.get("content-type")?.startsWith("text/event-stream")
      ? [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!))
      : [JSON.parse(text)].flat();
    expect(messages.map((m: { id: number }) => m.id).sort()).toEqual([1, 2]);
    for (const m of messages) expect(m.result.isError).toBeFalsy();
  });

  it("answers GET, DELETE and PUT with a 405 problem at both addresses, never a stream", async () => {
    for (const path of ADDRESSES) {
      for (const method of ["GET", "DELETE", "PUT"]) {
        const response = await call(path, { method, headers: { accept: "text/event-stream" } });
        expect(response.status, `${method} ${path}`).toBe(405);
        expect(response.headers.get("allow")).toBe("POST");
        expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(ProblemSchema.parse(await response.json()).code).toBe("method_not_allowed");
      }
    }
  });

  it("rejects a foreign Host (DNS rebinding) and accepts the city's own Host from any Origin (CORS lets agents anywhere call it)", async () => {
    const port = new URL(baseUrl()).port;
    for (const path of ADDRESSES) {
      expect(await rawPost(path, { host: "evil.example.com" })).toBe(403);
      expect(await rawPost(path, { host: "evil.example.com", origin: "http://evil.example.com" })).toBe(403);
      expect(await rawPost(path, { host: `127.0.0.1:${port}`, origin: "http://agents-elsewhere.example" })).toBe(200);
      expect(await rawPost(path, { host: `localhost:${port}`, origin: `http://localhost:${port}` })).toBe(200);
      expect(await rawPost(path, { host: `127.0.0.1:${port}` })).toBe(200);
    }
  });

  it("is named in llms.txt with both addresses", async () => {
    const text = await (await call("/llms.txt")).text();
    expect(text).toContain(`${baseUrl()}/mcp`);
    expect(text).toContain(`${baseUrl()}/api/mcp`);
  });
});
