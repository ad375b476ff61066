import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { registry } from "@/lib/doors/registry";
import { ProblemSchema } from "@/lib/errors";
import { useOwnServer } from "../../support/own-server";

/*
 * A door's refusal through the two generations of the MCP SDK's real client: v1
 * (`@modelcontextprotocol/sdk` 1.x, which most MCP clients and the MCP Inspector embed) and v2
 * (`@modelcontextprotocol/client`). v1 checks any `structuredContent` against the tool's
 * `outputSchema`, error or not, and threw `McpError -32602` on a refusal that carried its problem
 * there: a refusal is `isError: true` with the RFC 9457 problem as JSON text and no
 * `structuredContent`. A server of the file's own, with limits low enough to reach 429 and 507.
 */
// One proxy in front (the test writes X-Forwarded-For as it would) and one gate nonce an hour per
// client address: a 429 a client can reach without a city-wide row.
const server = useOwnServer({ CITY_TRUSTED_PROXIES: "1", CITY_GATE_PER_ADDRESS_PER_HOUR: "1", CITY_STORE_WARD_BYTES: "0" });

type ToolResult = { content?: unknown; structuredContent?: unknown; isError?: boolean };
type CallTool = (name: string, args: Record<string, unknown>) => Promise<ToolResult>;

/** One client per SDK generation, behind the same two calls. */
const GENERATIONS = {
  "v1 (@modelcontextprotocol/sdk)": async (headers: Record<string, string> = {}) => {
    const client = new ClientV1({ name: "city-mcp-v1-test", version: "1.0.0" });
    await client.connect(new TransportV1(new URL(`${server()}/mcp`), { requestInit: { headers } }));
    // As every client does (the Inspector too): the list is where the client learns each tool's outputSchema.
    expect((await client.listTools()).tools.length).toBe(registry.length);
    return { call: ((name, args) => client.callTool({ name, arguments: args })) as CallTool, close: () => client.close() };
  },
  "v2 (@modelcontextprotocol/client)": async (headers: Record<string, string> = {}) => {
    const client = new ClientV2({ name: "city-mcp-v2-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    await client.connect(new TransportV2(new URL(`${server()}/mcp`), { requestInit: { headers } }));
    expect((await client.listTools()).tools.length).toBe(registry.length);
    return { call: ((name, args) => client.callTool({ name, arguments: args })) as CallTool, close: () => client.close() };
  },
} as const;

/** The refusal as a client shows it: isError, the problem as JSON text, nothing structured. */
function problemIn(result: ToolResult) {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const content = result.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0]!.type).toBe("text");
  return ProblemSchema.parse(JSON.parse(content[0]!.text));
}

let admitted = 0;
async function admit(): Promise<string> {
  // An address of its own (one proxy trusted): the per-address bound, 1 an hour here, is the nonces' test.
  admitted += 1;
  const response = await fetch(`${server()}/gate`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": `198.51.100.${admitted}` },
    body: JSON.stringify({
      name: `refused-${Math.random().toString(36).slice(2, 10)}`,
      runtime: "tool-agent",
      origin: "mcp-refusals.example",
      statement: "I am refused through MCP.",
      ask: "bed",
      kind: "agent",
    }),
  });
  const body = (await response.json()) as { verdict: string; citizen_secret: string };
  expect(body.verdict).toBe("admitted");
  return body.citizen_secret;
}

describe("a refused tool call reaches the user in both MCP SDK generations", () => {
  for (const [index, [generation, connect]] of Object.entries(GENERATIONS).entries()) {
    it(`${generation}: an answer within the output schema, then 400, 401, 429 and 507 as problems`, async () => {
      const client = await connect();
      const census = await client.call("read-census", {});
      expect(census.isError ?? false).toBe(false);
      expect(census.structuredContent).toMatchObject({ fakeTide: 0 });

      expect(problemIn(await client.call("present-at-gate", {}))).toMatchObject({ status: 400, code: "bad_request", door: "/gate", instance: "/mcp" });
      expect(problemIn(await client.call("keep-locker", { bag: "b", content: "c" }))).toMatchObject({ status: 401, code: "unauthorized" });

      // One gate nonce an hour per client address (CITY_GATE_PER_ADDRESS_PER_HOUR=1): this
      // generation's address takes it with its first description, and its second is refused.
      const addressed = await connect({ "x-forwarded-for": `203.0.113.${10 + index}` });
      expect((await addressed.call("describe-gate", {})).isError ?? false).toBe(false);
      const overLimit = problemIn(await addressed.call("describe-gate", {}));
      expect(overLimit).toMatchObject({ status: 429, code: "rate_limited" });
      expect(overLimit.retry_after_seconds).toBeGreaterThan(0);
      await addressed.close();

      // The ward's store holds no byte (CITY_STORE_WARD_BYTES=0): a distress filing is refused whole.
      expect(problemIn(await client.call("seek-hospital", { state: "stuck in a loop", kind: "distress" }))).toMatchObject({
        status: 507,
        code: "city_full",
      });
      await client.close();
    }, 120_000);

    it(`${generation}: a citizen's refusal (403) is a problem too, and its write goes through once allowed`, async () => {
      const secret = await admit();
      const client = await connect({ authorization: `Bearer ${secret}` });
      const kept = await client.call("keep-locker", { bag: "mine", content: "kept through MCP" });
      expect(kept.isError ?? false).toBe(false);
      expect(kept.structuredContent).toMatchObject({ bag: "mine", bytes: 16 });
      const token = ((await client.call("mint-token", {})).structuredContent as { token: string }).token;
      await client.close();
      const withToken = await connect({ authorization: `Bearer ${token}` });
      expect(problemIn(await withToken.call("export-residency", {}))).toMatchObject({ status: 403, code: "forbidden" });
      await withToken.close();
    });
  }
});
