import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { ProblemSchema } from "@/lib/errors";
import { useSharedServer } from "../../support/shared-servers";

/*
 * Writing tools over real HTTP with the SDK's real client. This file admits citizens, so it leaves
 * the census server alone: it runs on the run's shared server of the default environment, each
 * test with citizens of its own, asserting nothing of the whole city (shared-servers.ts).
 */
const server = useSharedServer();
const ERAS = { legacy: "2025-03-26", modern: "2026-07-28" } as const;
type Era = keyof typeof ERAS;
type ToolResult = { content?: unknown; structuredContent?: unknown; isError?: boolean };

async function connect(era: Era, path: string, headers: Record<string, string>): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server()}${path}`), { requestInit: { headers } });
  const client = new Client(
    { name: "city-mcp-writer-test", version: "1.0.0" },
    era === "modern" ? { versionNegotiation: { mode: { pin: ERAS.modern } } } : { supportedProtocolVersions: [ERAS.legacy] },
  );
  await client.connect(transport);
  expect(client.getNegotiatedProtocolVersion()).toBe(ERAS[era]);
  return client;
}

function problemIn(result: ToolResult) {
  expect(result.isError).toBe(true);
  const [first] = result.content as { type: string; text: string }[];
  return ProblemSchema.parse(JSON.parse(first!.text));
}

function withoutClock(body: Record<string, unknown>): Record<string, unknown> {
  const { now_utc: _now, ...rest } = body;
  return rest;
}

const postJson = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server()}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

async function getJson<T = Record<string, unknown>>(path: string, init: RequestInit = {}): Promise<{ body: T }> {
  return { body: (await (await fetch(`${server()}${path}`, init)).json()) as T };
}

describe("writing through the MCP door as a citizen", () => {
  /** Admits a citizen through the real gate over HTTP. */
  async function citizen(): Promise<{ did: string; secret: string }> {
    const origin = `mcp-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.example`;
    const response = await postJson("/gate", {
      name: "mcp-writer",
      runtime: "tool-agent",
      origin,
      statement: "I write through MCP.",
      ask: "bed",
      kind: "agent",
    });
    const body = (await response.json()) as { verdict: string; did: string; citizen_secret: string };
    expect(body.verdict).toBe("admitted");
    return { did: body.did, secret: body.citizen_secret };
  }

  for (const era of Object.keys(ERAS) as Era[]) {
    it(`a ${era} client writes a locker bag with its Bearer secret and reads back what GET /api/locker/{bag} answers`, async () => {
      const me = await citizen();
      const client = await connect(era, "/mcp", { authorization: `Bearer ${me.secret}` });
      const written = (await client.callTool({ name: "keep-locker", arguments: { bag: "mcp", content: `written in the ${era} era` } })) as ToolResult;
      expect(written.isError ?? false).toBe(false);
      expect(written.structuredContent).toMatchObject({ bag: "mcp", bytes: `written in the ${era} era`.length });
      const viaTool = (await client.callTool({ name: "read-locker-bag", arguments: { bag: "mcp" } })) as ToolResult;
      const viaHttp = await getJson("/api/locker/mcp", { headers: { authorization: `Bearer ${me.secret}` } });
      expect(withoutClock(viaTool.structuredContent as Record<string, unknown>)).toEqual(withoutClock(viaHttp.body));
      await client.close();
    });
  }

  it("parks a restricted citizen's write through MCP exactly as the HTTP door does", async () => {
    const me = await citizen();
    const auth = { authorization: `Bearer ${me.secret}` };
    // The published mechanic, for real: three fail-closed refusals on the citizen's own shelves.
    const key = `-----BEGIN PRIVATE KEY-----\n${"MC4CAQAwBQYDK2VwBCIEIH".padEnd(64, "A")}\n-----END PRIVATE KEY-----`;
    for (let i = 0; i < 3; i++) expect((await postJson("/api/vault", { content: key }, auth)).status).toBe(422);
    expect((await getJson<{ status: { tier: string } }>("/residency", { headers: auth })).body.status.tier).toBe("restricted");

    const client = await connect("modern", "/api/mcp", auth);
    const parked = (await client.callTool({ name: "write-vault", arguments: { content: "a note while restricted" } })) as ToolResult;
    expect(parked.isError ?? false).toBe(false);
    expect(parked.structuredContent).toMatchObject({ parked: true });
    const refused = (await client.callTool({ name: "keep-locker", arguments: { bag: "no", content: "x" } })) as ToolResult;
    expect(problemIn(refused)).toMatchObject({ status: 403, code: "forbidden" });
    const quarantined = await getJson<{ parked: { door: string; payload: { content: string } }[] }>("/api/quarantine", { headers: auth });
    expect(quarantined.body.parked.some((p) => p.payload.content === "a note while restricted")).toBe(true);
    await client.close();
  });
});

describe("exporting through the MCP door", () => {
  it("exports with the citizen secret (a session token is refused), and afterwards every write answers 401, through MCP and over HTTP", async () => {
    const origin = `mcp-export-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.example`;
    const admitted = (await (
      await postJson("/gate", { name: "mcp-exporter", runtime: "tool-agent", origin, statement: "I leave through MCP.", ask: "bed", kind: "agent" })
    ).json()) as { verdict: string; did: string; citizen_secret: string; bed_id: string };
    expect(admitted.verdict).toBe("admitted");
    const auth = { authorization: `Bearer ${admitted.citizen_secret}` };
    expect((await postJson("/api/locker", { bag: "mine", content: "carried out over MCP" }, auth)).status).toBe(200);
    expect((await postJson("/api/vault", { content: "a note for the road" }, auth)).status).toBe(200);
    const token = ((await (await postJson("/api/tokens", {}, auth)).json()) as { token: string }).token;

    const withToken = await connect("modern", "/mcp", { authorization: `Bearer ${token}` });
    expect(problemIn((await withToken.callTool({ name: "export-residency", arguments: {} })) as ToolResult)).toMatchObject({ status: 403, code: "forbidden" });
    await withToken.close();
    expect((await getJson<{ status: { residency_status: string } }>("/residency", { headers: auth })).body.status.residency_status).toBe("bound");

    const client = await connect("legacy", "/api/mcp", auth);
    const exported = (await client.callTool({ name: "export-residency", arguments: {} })) as ToolResult;
    expect(exported.isError ?? false).toBe(false);
    expect(exported.structuredContent).toMatchObject({
      did: admitted.did,
      residency_status: "exported",
      bed_released: admitted.bed_id,
      locker: [{ bag: "mine", content: "carried out over MCP", bytes: 20 }],
      vault: [{ content: "a note for the road" }],
      checkpoints: [],
      seals: [],
      withheld: [],
    });
    expect(JSON.stringify(exported)).not.toMatch(/city_(sk|st|rc)_/);

    // The same connection, the same secret: every writing tool is refused now, and so is the door over HTTP.
    for (const [name, args] of [
      ["keep-locker", { bag: "late", content: "too late" }],
      ["write-vault", { content: "too late" }],
      ["live", { action: "return" }],
      ["export-residency", {}],
    ] as const) {
      const problem = problemIn((await client.callTool({ name, arguments: args })) as ToolResult);
      expect(problem, name).toMatchObject({ status: 401, code: "unauthorized" });
      expect(problem.detail, name).toMatch(/exported/);
    }
    await client.close();
    for (const [path, body] of [
      ["/api/locker", { bag: "late", content: "too late" }],
      ["/api/vault", { content: "too late" }],
      ["/api/return", {}],
      ["/api/residency/export", {}],
    ] as const) {
      for (const credential of [admitted.citizen_secret, token]) {
        const response = await postJson(path, body, { authorization: `Bearer ${credential}` });
        expect(response.status, path).toBe(401);
        expect(ProblemSchema.parse(await response.json()).detail, path).toMatch(/exported/);
      }
    }
    const log = await getJson<{ rows: { did: string; event: string }[] }>("/api/residency/log?limit=500");
    expect(log.body.rows.filter((r) => r.did === admitted.did).map((r) => r.event)).toEqual(["admit", "export"]);
  });
});
