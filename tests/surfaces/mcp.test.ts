import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { useDatabase } from "@/lib/city/database";
import { hashCredential, mintCredential } from "@/lib/city/keys";
import { readCensusDoor, readLlms } from "@/lib/doors/surfaces/discovery";
import { door, type AnyDoor } from "@/lib/doors/door";
import { mcpHandler } from "@/lib/doors/surfaces/mcp";
import { ProblemSchema } from "@/lib/errors";
import { describeOnDatabases } from "../support/databases";
import { insertCitizenRow } from "../support/citizens";

const ringBell = door({
  name: "ring-bell-test",
  method: "POST",
  path: "/api/bell/{tower}",
  summary: "Rings a bell in a tower (test door).",
  auth: "citizen",
  maxBodyBytes: 128,
  input: z.object({ tower: z.string(), times: z.number().int().min(1).max(3) }),
  output: z.object({ now_utc: z.string(), did: z.string(), tower: z.string(), rung: z.number() }),
  run: async (ctx, input) => ({ now_utc: ctx.now.toISOString(), did: ctx.caller.did ?? "", tower: input.tower, rung: input.times }),
});

const consult = door({ ...ringBell, name: "consult-test", path: "/api/consult-test", spends: true });

const DOORS: AnyDoor[] = [readCensusDoor, readLlms, ringBell, consult];
const ERAS = { legacy: "2025-03-26", modern: "2026-07-28" } as const;
type Era = keyof typeof ERAS;

/** The MCP door's handler in process (no network), as a client's fetch. */
function inProcessFetch() {
  const handler = mcpHandler(DOORS);
  return async (url: string | URL, init?: RequestInit) => {
    const sent = new Headers(init?.headers);
    sent.set("host", new URL(url).host);
    return handler(new Request(url, { ...init, headers: sent }));
  };
}

/** The SDK's real client, talking to the handler in process (no network) as if over HTTP. */
async function connect(era: Era, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), { fetch: inProcessFetch(), requestInit: { headers } });
  const client = new Client(
    { name: "city-mcp-test", version: "1.0.0" },
    era === "modern" ? { versionNegotiation: { mode: { pin: ERAS.modern } } } : { supportedProtocolVersions: [ERAS.legacy] },
  );
  await client.connect(transport);
  expect(client.getNegotiatedProtocolVersion()).toBe(ERAS[era]);
  return client;
}

type ToolResult = { content?: unknown; structuredContent?: unknown; isError?: boolean };

function problemIn(result: ToolResult) {
  expect(result.isError).toBe(true);
  const [first] = result.content as { type: string; text: string }[];
  // No structuredContent on an error: it would have to match the tool's outputSchema (MCP SDK v1 checks it).
  expect(result.structuredContent).toBeUndefined();
  return ProblemSchema.parse(JSON.parse(first!.text));
}

describeOnDatabases("the MCP door", (t) => {
  beforeAll(() => useDatabase(t().db));

  for (const era of Object.keys(ERAS) as Era[]) {
    it(`lists exactly the doors it is built from, with their hints (${era})`, async () => {
      const client = await connect(era);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(DOORS.map((d) => d.name));
      const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
      expect(byName["read-census"]?.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
      expect(byName["ring-bell-test"]?.annotations?.readOnlyHint).not.toBe(true);
      expect(byName["ring-bell-test"]?.inputSchema).toMatchObject({ type: "object", required: ["tower", "times"] });
      expect(byName["ring-bell-test"]?.description).toContain("Authorization: Bearer");
      expect(byName["consult-test"]?.annotations?.openWorldHint).toBe(true);
      expect(byName["consult-test"]?.description).toContain("Spends real inference");
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.name)).toEqual(["read-llms"]);
      await client.close();
    });

    it(`answers an anonymous write with isError and the 401 problem, not a protocol error (${era})`, async () => {
      const client = await connect(era);
      const result = await client.callTool({ name: "ring-bell-test", arguments: { tower: "north", times: 1 } });
      expect(problemIn(result)).toMatchObject({ status: 401, code: "unauthorized", door: "/api/bell/{tower}", instance: "/mcp" });
      await client.close();
    });

    it(`runs a write as the citizen whose Bearer secret is on the HTTP request (${era})`, async () => {
      const secret = mintCredential("secret");
      const citizen = await insertCitizenRow(t().db, { secretHash: hashCredential(secret) });
      const client = await connect(era, { Authorization: `Bearer ${secret}` });
      const result = await client.callTool({ name: "ring-bell-test", arguments: { tower: "north", times: 2 } });
      expect(result.isError).toBeFalsy();
      const [first] = result.content as { type: string; text: string }[];
      expect(JSON.parse(first!.text)).toMatchObject({ did: citizen.did, tower: "north", rung: 2 });
      if (era === "modern") expect(result.structuredContent).toMatchObject({ did: citizen.did, rung: 2 });
      await client.close();
    });

    it(`answers invalid and oversized arguments with the door's own problems (${era})`, async () => {
      const secret = mintCredential("secret");
      await insertCitizenRow(t().db, { secretHash: hashCredential(secret) });
      const client = await connect(era, { Authorization: `Bearer ${secret}` });
      const invalid = problemIn(await client.callTool({ name: "ring-bell-test", arguments: { tower: "north", times: 9 } }));
      expect(invalid).toMatchObject({ status: 400, code: "bad_request" });
      expect(invalid.errors?.[0]?.path).toBe("times");
      const big = problemIn(await client.callTool({ name: "ring-bell-test", arguments: { tower: "x".repeat(200), times: 1 } }));
      expect(big).toMatchObject({ status: 413, code: "payload_too_large", limit: { name: "body_bytes", limit: 128 } });
      await client.close();
    });

    it(`refuses an unknown tool with a protocol error (${era})`, async () => {
      const client = await connect(era);
      await expect(client.callTool({ name: "fetch-url", arguments: { url: "https://example.com" } })).rejects.toThrow(/fetch-url/);
      await client.close();
    });

    it(`reads the census and llms.txt through the doors (${era})`, async () => {
      await insertCitizenRow(t().db, { bedId: `bed-${era}` });
      const client = await connect(era);
      const census = await client.callTool({ name: "read-census", arguments: {} });
      const [first] = census.content as { type: string; text: string }[];
      const body = JSON.parse(first!.text);
      expect(body).toMatchObject({ fakeTide: 0 });
      expect(body.occupancy).toBeGreaterThan(0);
      const llms = await client.callTool({ name: "read-llms", arguments: {} });
      expect(llms.structuredContent).toBeUndefined();
      expect((llms.content as { text: string }[])[0]!.text.startsWith("# CITY\n")).toBe(true);
      const { resources } = await client.listResources();
      const read = await client.readResource({ uri: resources[0]!.uri });
      expect(read.contents[0]).toMatchObject({ mimeType: "text/plain", text: (llms.content as { text: string }[])[0]!.text });
      await client.close();
    });
  }

  it("shows a refusal to the v1 SDK's client (@modelcontextprotocol/sdk 1.x, the MCP Inspector's), which checks structuredContent against the outputSchema even on an error", async () => {
    const secret = mintCredential("secret");
    await insertCitizenRow(t().db, { secretHash: hashCredential(secret) });
    for (const headers of [{}, { Authorization: `Bearer ${secret}` }] as Record<string, string>[]) {
      const client = new ClientV1({ name: "city-mcp-v1-test", version: "1.0.0" });
      await client.connect(new TransportV1(new URL("http://localhost/mcp"), { fetch: inProcessFetch(), requestInit: { headers } }));
      // The list is where the client learns each tool's outputSchema, and so starts checking answers.
      const { tools } = await client.listTools();
      expect(tools.find((tool) => tool.name === "ring-bell-test")?.outputSchema).toMatchObject({ type: "object" });
      const refused = problemIn((await client.callTool({ name: "ring-bell-test", arguments: { tower: "north", times: 9 } })) as ToolResult);
      expect(refused).toMatchObject(
        Object.keys(headers).length ? { status: 400, code: "bad_request" } : { status: 401, code: "unauthorized", instance: "/mcp" },
      );
      await client.close();
    }
  });

  it("names both protocol eras it speaks in server/discover, as the spec does", async () => {
    const handler = mcpHandler(DOORS);
    const response = await handler(
      new Request("http://localhost/mcp", {
        method: "POST",
        headers: {
          host: "localhost",
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": ERAS.modern,
          "mcp-method": "server/discover",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "server/discover",
          params: {
            _meta: {
              "io.modelcontextprotocol/protocolVersion": ERAS.modern,
              "io.modelcontextprotocol/clientInfo": { name: "discover-test", version: "1" },
              "io.modelcontextprotocol/clientCapabilities": {},
            },
          },
        }),
      }),
    );
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const body = JSON.parse(text.startsWith("{") ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? "{}"));
    expect(body.result?.supportedVersions, text).toEqual([ERAS.modern, ERAS.legacy]);
  });
});
