import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { count, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { vaultNotes } from "@/db/schema";
import { useDatabase } from "@/lib/city/database";
import { serveA2a } from "@/lib/doors/surfaces/a2a-server";
import { mcpHandler } from "@/lib/doors/surfaces/mcp";
import { ProblemSchema } from "@/lib/errors";
import { signRequest } from "@/lib/sign-request";
import { describeOnDatabases } from "../support/databases";
import { admitWithKey, newKey, type TestKey } from "../support/signed";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const MCP = "http://localhost/mcp";
const A2A = "http://city.test/api/a2a";

/** The SDK's real MCP client whose fetch signs every POST with the key (the way an agent would). */
async function signingClient(key: TestKey, sent: Request[] = []): Promise<Client> {
  const handler = mcpHandler();
  const fetch = async (url: string | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set("host", new URL(url).host);
    if ((init?.method ?? "GET") === "POST") {
      const signed = await signRequest({ method: "POST", url: String(url), body: String(init!.body ?? ""), privateKey: key.seed });
      for (const [name, value] of Object.entries(signed)) headers.set(name, value);
    }
    const request = new Request(url, { ...init, headers });
    sent.push(request.clone());
    return handler(request);
  };
  const client = new Client({ name: "city-signed-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP), { fetch }));
  return client;
}

function problemInTool(result: { content?: unknown; isError?: boolean }) {
  expect(result.isError).toBe(true);
  return ProblemSchema.parse(JSON.parse((result.content as { text: string }[])[0]!.text));
}

/** One signed JSON-RPC call to the A2A bridge (1.0), or the same bytes and headers again. */
async function a2aCall(key: TestKey, skill: string, fields: Record<string, unknown>, replay?: { body: string; headers: Record<string, string> }) {
  const body =
    replay?.body ??
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ data: { skill, ...fields }, mediaType: "application/json" }] } },
    });
  const headers = replay?.headers ?? {
    "content-type": "application/json",
    "a2a-version": "1.0",
    ...(await signRequest({ method: "POST", url: A2A, body, privateKey: key.seed })),
  };
  const response = await serveA2a(new Request(A2A, { method: "POST", headers, body }));
  return { answer: (await response.json()) as { result?: any; error?: { data?: Record<string, unknown>[] } }, body, headers };
}

describeOnDatabases("signed requests on the MCP door and the A2A bridge (CITY-SIG/1)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const notesOf = async (did: string) => (await t().db.select({ n: count() }).from(vaultNotes).where(eq(vaultNotes.did, did)))[0]!.n;

  it("runs an MCP tool as the citizen whose key signed the POST, and refuses the same POST sent again", async () => {
    const me = await admitWithKey();
    const sent: Request[] = [];
    const client = await signingClient(me.key, sent);
    const wrote = await client.callTool({ name: "write-vault", arguments: { content: "by MCP, signed" } });
    expect(wrote.isError, JSON.stringify(wrote.content)).toBeFalsy();
    const read = await client.callTool({ name: "read-vault", arguments: {} });
    expect(JSON.stringify(read.content)).toContain("by MCP, signed");
    await client.close();
    expect(await notesOf(me.did)).toBe(1);
    // The tools/call POST of the write, replayed byte for byte: the POST is refused before any tool
    // runs (its nonce was spent once, by the POST), nothing is stored.
    const call = (await Promise.all(sent.map(async (r) => ({ r, text: await r.clone().text() })))).find((c) => c.text.includes("by MCP, signed"))!;
    const replay = await mcpHandler()(new Request(MCP, { method: "POST", headers: call.r.headers, body: call.text }));
    expect(replay.status).toBe(401);
    expect((await replay.json()).code).toBe("signature_replayed");
    expect(replay.headers.get("accept-signature")).toContain("nonce");
    expect(await notesOf(me.did)).toBe(1);
    // So is a replayed call of a public tool, which reads no credential at all: the first runs, the same POST again does not.
    const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "read-census", arguments: {} } });
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      host: "localhost",
      ...(await signRequest({ method: "POST", url: MCP, body, privateKey: me.key.seed })),
    };
    expect((await mcpHandler()(new Request(MCP, { method: "POST", headers, body }))).status).toBe(200);
    const publicReplay = await mcpHandler()(new Request(MCP, { method: "POST", headers, body }));
    expect(publicReplay.status).toBe(401);
    expect((await publicReplay.json()).code).toBe("signature_replayed");
  });

  it("refuses a tampered MCP body and two credentials before the SDK reads it: 401 and 400 with Accept-Signature", async () => {
    const me = await admitWithKey();
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write-vault", arguments: { content: "x" } } });
    const signed = await signRequest({ method: "POST", url: MCP, body, privateKey: me.key.seed });
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", host: "localhost", ...signed };
    const tampered = await mcpHandler()(new Request(MCP, { method: "POST", headers, body: body.replace('"x"', '"y"') }));
    expect(tampered.status).toBe(401);
    expect((await tampered.json()).code).toBe("signature_invalid");
    expect(tampered.headers.get("accept-signature")).toContain('"content-digest"');
    const both = await mcpHandler()(new Request(MCP, { method: "POST", headers: { ...headers, authorization: `Bearer ${me.citizen_secret}` }, body }));
    expect(both.status).toBe(400);
    expect((await both.json()).code).toBe("credential_conflict");
    expect(await notesOf(me.did)).toBe(0);
  });

  it("runs an A2A skill as the signing citizen; a replay, an unknown key and a tampered body are refused with their problems", async () => {
    const me = await admitWithKey();
    const first = await a2aCall(me.key, "write-vault", { content: "by A2A, signed" });
    expect(first.answer.error, JSON.stringify(first.answer.error)).toBeUndefined();
    expect(first.answer.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(await notesOf(me.did)).toBe(1);
    // A replay and an unknown key are refused before any skill runs: the POST's own problem, nothing kept.
    const again = await serveA2a(new Request(A2A, { method: "POST", headers: first.headers, body: first.body }));
    expect(again.status).toBe(401);
    expect((await again.json()).code).toBe("signature_replayed");
    const stranger = await a2aCall(await newKey(), "write-vault", { content: "x" });
    expect(stranger.answer).toMatchObject({ status: 401, code: "unknown_key" });
    const fresh = await a2aCall(me.key, "write-vault", { content: "as signed" });
    void fresh;
    const tampered = await serveA2a(new Request(A2A, { method: "POST", headers: (await a2aCall(me.key, "read-vault", {})).headers, body: first.body }));
    expect(tampered.status).toBe(401);
    expect(tampered.headers.get("accept-signature")).toContain("nonce");
    expect(await notesOf(me.did)).toBe(2);
  });
});
