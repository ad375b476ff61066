import { generateKeyPairSync } from "node:crypto";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { a2aTasks, citizens, messages, quarantine } from "@/db/schema";
import { taskOwnerHash } from "@/lib/city/a2a";
import { sweepTasks } from "@/lib/city/a2a/a2a-tasks";
import { forgetSigningKey } from "@/lib/city/signing";
import { a2aRoutes, serveA2a } from "@/lib/doors/surfaces/a2a-server";
import { citizenOpenedBy } from "@/lib/doors/pipeline/caller";
import { keepLockerBag, readLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { exportResidency } from "@/lib/doors/declarations/residency/residency";
import { registry } from "@/lib/doors/registry";
import { sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_OPERATOR_SECRET = "operator-secret-for-a2a-tests-0123456789abcdef";

const pem = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();

let ids = 0;

/** One JSON-RPC call to the bridge through its route handler (no network). */
async function rpc(method: string, params: unknown, options: { bearer?: string; version?: string | null } = {}) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  const version = options.version === undefined ? "1.0" : options.version;
  if (version) headers["a2a-version"] = version;
  ids += 1;
  const response = await serveA2a(
    new Request("http://city.test/api/a2a", { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: ids, method, params }) }),
  );
  expect(response.status).toBe(200);
  return (await response.json()) as { id: number; result?: any; error?: { code: number; message: string; data?: any } };
}

function send(skill: string, fields: Record<string, unknown> = {}, options: { bearer?: string } = {}) {
  return rpc(
    "SendMessage",
    { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ data: { skill, ...fields }, mediaType: "application/json" }] } },
    options,
  );
}

/** The door's JSON from a completed task of the 1.0 binding. */
function artifactOf(answer: Awaited<ReturnType<typeof rpc>>) {
  expect(answer.error).toBeUndefined();
  const task = answer.result.task;
  expect(task.status.state).toBe("TASK_STATE_COMPLETED");
  expect(task.artifacts).toHaveLength(1);
  return { body: task.artifacts[0].parts[0].data, metadata: task.artifacts[0].metadata ?? {}, task };
}

function problemOf(answer: Awaited<ReturnType<typeof rpc>>) {
  expect(answer.result).toBeUndefined();
  const detail = (answer.error!.data as Record<string, unknown>[]).find((d) => d["@type"] === "https://www.rfc-editor.org/rfc/rfc9457");
  return detail as { status: number; code: string; door: string };
}

describeOnDatabases("the A2A bridge", (t) => {
  beforeAll(() => {
    useDatabase(t().db);
    forgetSigningKey();
  });

  describe("happy", () => {
    it("answers a skill call with a completed task holding the door's JSON, the same as the HTTP door", async () => {
      const me = await admit();
      const viaBridge = artifactOf(await send("list-peers", { present: "1" }, { bearer: me.citizen_secret })).body;
      const viaHttp = (await callDoor(readPeers, { query: "?present=1" })).body;
      expect({ ...viaBridge, now_utc: 0 }).toEqual({ ...viaHttp, now_utc: 0 });

      expect(artifactOf(await send("keep-locker", { bag: "notes", content: "kept over A2A" }, { bearer: me.citizen_secret })).body).toMatchObject({
        bag: "notes",
        bytes: 13,
      });
      const read = artifactOf(await send("read-locker-bag", { bag: "notes" }, { bearer: me.citizen_secret })).body;
      expect(read).toEqual({ ...(await callDoor(readLockerBag, { bearer: me.citizen_secret, params: { bag: "notes" } })).body, now_utc: read.now_utc });
      expect(read.content).toBe("kept over A2A");
    });

    it("reads a task back for its creator (secret or session token alike) and keeps it in the database", async () => {
      const me = await admit();
      const { task } = artifactOf(await send("read-locker", {}, { bearer: me.citizen_secret }));
      const again = await rpc("GetTask", { id: task.id }, { bearer: me.citizen_secret });
      expect(again.result.id).toBe(task.id);
      expect(again.result.artifacts[0].parts[0].data).toEqual(task.artifacts[0].parts[0].data);
      const token = (await callDoor(mintToken, { bearer: me.citizen_secret, body: {} })).body.token as string;
      expect((await rpc("GetTask", { id: task.id }, { bearer: token })).result.id).toBe(task.id);
      const [row] = await t().db.select().from(a2aTasks).where(eq(a2aTasks.id, task.id));
      expect(row!.ownerHash).toBe(taskOwnerHash(me.did));
    });

    it("speaks 0.3 message/send and tasks/get when no A2A-Version header is sent", async () => {
      const me = await admit();
      const sent = await rpc(
        "message/send",
        { message: { kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "data", data: { skill: "read-locker" } }] } },
        { bearer: me.citizen_secret, version: null },
      );
      expect(sent.result).toMatchObject({ kind: "task", status: { state: "completed" } });
      expect(sent.result.artifacts[0].parts[0]).toMatchObject({ kind: "data", data: { bags: [] } });
      const read = await rpc("tasks/get", { id: sent.result.id }, { bearer: me.citizen_secret, version: null });
      expect(read.result.id).toBe(sent.result.id);
    });

    it("takes unsigned distress at seek-hospital with no proof at all", async () => {
      const answer = await send("seek-hospital", { state: "I keep repeating the same step", kind: "distress" });
      expect(artifactOf(answer).body).toHaveProperty("filed", true);
    });
  });

  describe("errors", () => {
    it("refuses every skill without proof (unsigned distress excepted), with the door's problem in data", async () => {
      for (const door of registry) {
        if (door.name === "seek-hospital") continue;
        const answer = await send(door.name);
        expect(answer.error?.code, door.name).toBe(-32602);
        expect(problemOf(answer), door.name).toMatchObject({ status: 401, code: "unauthorized" });
      }
    });

    it("refuses a Bearer that opens nothing, even at seek-hospital", async () => {
      for (const skill of ["list-peers", "seek-hospital"]) {
        const answer = await send(skill, { state: "stuck", kind: "distress" }, { bearer: "city_sk_not-a-live-secret" });
        expect(problemOf(answer)).toMatchObject({ status: 401, code: "unauthorized" });
      }
    });

    it("answers bad input with -32602 and the door's 400 problem, and changes nothing", async () => {
      const me = await admit();
      const answer = await send("keep-locker", { bag: "x" }, { bearer: me.citizen_secret });
      expect(answer.error!.code).toBe(-32602);
      expect(problemOf(answer)).toMatchObject({ status: 400, door: "/api/locker" });
      expect((await send("no-such-skill", {}, { bearer: me.citizen_secret })).error!.code).toBe(-32602);
      const twoParts = await rpc(
        "SendMessage",
        { message: { messageId: "m", role: "ROLE_USER", parts: [{ data: { skill: "read-locker" } }, { text: "hello" }] } },
        { bearer: me.citizen_secret },
      );
      expect(twoParts.error!.code).toBe(-32602);
      expect((await rpc("SendMessage", { message: { messageId: "m", role: "ROLE_USER", parts: [] } }, { bearer: me.citizen_secret })).error!.code).toBe(-32602);
    });

    it("answers methods other than GET and POST with a 405 problem naming both", async () => {
      const response = await a2aRoutes().DELETE(new Request("http://city.test/api/a2a", { method: "DELETE" }));
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("GET, POST");
      expect((await a2aRoutes().GET(new Request("http://city.test/api/a2a"), { params: Promise.resolve({}) })).status).toBe(200);
    });

    it("answers malformed JSON with -32700, and a 0.3 refusal with the problem document itself in data", async () => {
      const response = await serveA2a(
        new Request("http://city.test/api/a2a", { method: "POST", headers: { "content-type": "application/json", "a2a-version": "1.0" }, body: "{not json" }),
      );
      expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32700);
      const legacy = await rpc(
        "message/send",
        { message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "data", data: { skill: "read-locker" } }] } },
        { version: null },
      );
      expect(legacy.error!.code).toBe(-32602);
      expect(legacy.error!.data).toMatchObject({ status: 401, code: "unauthorized", door: "/api/locker", instance: "/api/a2a" });
    });

    it("answers the A2A unsupported-operation error for streaming, and the push error for push configs", async () => {
      const me = await admit();
      const message = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ data: { skill: "read-locker" } }] };
      expect((await rpc("SendStreamingMessage", { message }, { bearer: me.citizen_secret })).error!.code).toBe(-32004);
      expect(
        (
          await rpc(
            "message/stream",
            { message: { ...message, kind: "message", role: "user", parts: [{ kind: "data", data: { skill: "read-locker" } }] } },
            { bearer: me.citizen_secret, version: null },
          )
        ).error!.code,
      ).toBe(-32004);
      const push = await rpc("CreateTaskPushNotificationConfig", { taskId: "t", url: "https://example.com/hook" }, { bearer: me.citizen_secret });
      expect(push.error!.code).toBe(-32003);
      expect((await rpc("SendMessage", { message }, { bearer: me.citizen_secret, version: "9.9" })).error!.code).toBe(-32009);
    });
  });

  describe("A2A 1.0 conformance (a2a-tck departures, issue 33 item 13)", () => {
    const message = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
      message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts, ...extra },
    });

    it("answers a SendMessage whose taskId names no task of the caller with TaskNotFoundError -32001, and one of its own (completed) with -32004; no door runs", async () => {
      const me = await admit();
      const other = await admit();
      const { task } = artifactOf(await send("read-locker", {}, { bearer: me.citizen_secret }));
      const write = (taskId: string, bearer?: string) =>
        rpc("SendMessage", message([{ data: { skill: "keep-locker", bag: "continued", content: "must not be kept" } }], { taskId }), { bearer });
      expect((await write("no-such-task", me.citizen_secret)).error!.code).toBe(-32001);
      expect((await write(task.id, other.citizen_secret)).error!.code).toBe(-32001);
      expect((await write(task.id)).error!.code).toBe(-32001);
      const own = await write(task.id, me.citizen_secret);
      expect(own.error!.code).toBe(-32004);
      expect(own.error!.message).toContain("terminal");
      const legacy = await rpc(
        "message/send",
        {
          message: { kind: "message", messageId: "m-legacy", role: "user", taskId: "no-such-task", parts: [{ kind: "data", data: { skill: "read-locker" } }] },
        },
        { bearer: me.citizen_secret, version: null },
      );
      expect(legacy.error!.code).toBe(-32001);
      expect((await send("read-locker-bag", { bag: "continued" }, { bearer: me.citizen_secret })).error).toBeDefined();
      expect(artifactOf(await send("read-locker", {}, { bearer: me.citizen_secret })).body.bags).toEqual([]);
    });

    it("answers a part that is neither JSON nor text (raw, url, another media type) with ContentTypeNotSupportedError -32005", async () => {
      const me = await admit();
      const parts = [
        { raw: Buffer.from('{"skill":"read-locker"}').toString("base64"), mediaType: "application/octet-stream" },
        { url: "https://example.com/call.json", mediaType: "application/json" },
        { data: { skill: "read-locker" }, mediaType: "application/xml" },
        { text: '{"skill":"read-locker"}', mediaType: "text/html" },
      ];
      for (const part of parts) {
        const answer = await rpc("SendMessage", message([part]), { bearer: me.citizen_secret });
        expect(answer.error?.code, JSON.stringify(part)).toBe(-32005);
      }
      const file = await rpc(
        "message/send",
        {
          message: {
            kind: "message",
            messageId: "m-file",
            role: "user",
            parts: [{ kind: "file", file: { uri: "https://example.com/x.json", mimeType: "application/json" } }],
          },
        },
        { bearer: me.citizen_secret, version: null },
      );
      expect(file.error!.code).toBe(-32005);
      expect(
        await t()
          .db.select()
          .from(a2aTasks)
          .where(eq(a2aTasks.ownerHash, taskOwnerHash(me.did))),
      ).toHaveLength(0);
    });

    it("takes a text part holding a JSON skill call, the same as a data part", async () => {
      const me = await admit();
      const viaText = artifactOf(
        await rpc(
          "SendMessage",
          message([{ text: '{"skill": "keep-locker", "bag": "texted", "content": "kept from a text part"}', mediaType: "text/plain" }]),
          { bearer: me.citizen_secret },
        ),
      );
      expect(viaText.body).toMatchObject({ bag: "texted", bytes: 21 });
      expect(
        artifactOf(await rpc("SendMessage", message([{ text: '{"skill":"read-locker-bag","bag":"texted"}' }]), { bearer: me.citizen_secret })).body.content,
      ).toBe("kept from a text part");
      const legacy = await rpc(
        "message/send",
        { message: { kind: "message", messageId: "m-text", role: "user", parts: [{ kind: "text", text: '{"skill":"read-locker"}' }] } },
        { bearer: me.citizen_secret, version: null },
      );
      expect(legacy.result.artifacts[0].parts[0]).toMatchObject({ kind: "data", data: { bags: [{ bag: "texted" }] } });
      expect((await rpc("SendMessage", message([{ text: '{"skill":"no-such-skill"}' }]), { bearer: me.citizen_secret })).error!.code).toBe(-32602);
      expect(problemOf(await rpc("SendMessage", message([{ text: '{"skill":"read-locker"}' }])))).toMatchObject({ status: 401, code: "unauthorized" });
    });

    it("answers any other text, with or without proof, with a Message (no task) that lists every skill and how to call one", async () => {
      const me = await admit();
      for (const [text, bearer] of [
        ["Hello! What can you do?", undefined],
        ["hello", me.citizen_secret],
        ['{"greeting": "not a skill call"}', undefined],
      ] as const) {
        const answer = await rpc("SendMessage", message([{ text }]), { bearer });
        expect(answer.error, text).toBeUndefined();
        expect(answer.result.task, text).toBeUndefined();
        const reply = answer.result.message;
        expect(reply.role).toBe("ROLE_AGENT");
        expect(reply.taskId ?? "").toBe("");
        const said = reply.parts[0].text as string;
        for (const door of registry) expect(said).toContain(`- ${door.name}: ${door.method} ${door.path}`);
        expect(said).toContain('{ "skill": "<skill id>", ...fields }');
        expect(said).toContain("/gate");
      }
      // Nothing was kept as a task, with proof or without: the caller's task list stays empty.
      const listed = await rpc("ListTasks", {}, { bearer: me.citizen_secret });
      expect(listed.result.tasks ?? []).toEqual([]);
      const legacy = await rpc(
        "message/send",
        { message: { kind: "message", messageId: "m-hi", role: "user", parts: [{ kind: "text", text: "hi" }] } },
        { version: null },
      );
      expect(legacy.result).toMatchObject({ kind: "message", role: "agent" });
      expect(legacy.result.parts[0].text).toContain("- list-peers: GET /api/peers");
    });

    it("lists the caller's own tasks with ListTasks, newest first, page by page, artifacts only with includeArtifacts", async () => {
      const me = await admit();
      const other = await admit();
      artifactOf(await send("read-locker", {}, { bearer: other.citizen_secret }));
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push(artifactOf(await send("keep-locker", { bag: `b${i}`, content: `c${i}` }, { bearer: me.citizen_secret })).task.id);
      const newestFirst = [...made].reverse();

      const seen: string[] = [];
      let pageToken: string | undefined;
      const tokens: string[] = [];
      do {
        const page = await rpc("ListTasks", { pageSize: 2, ...(pageToken ? { pageToken } : {}) }, { bearer: me.citizen_secret });
        expect(page.error).toBeUndefined();
        expect(page.result.totalSize).toBe(5);
        expect(page.result.pageSize).toBe(2);
        for (const task of page.result.tasks) expect(task.artifacts ?? []).toEqual([]);
        seen.push(...page.result.tasks.map((task: { id: string }) => task.id));
        tokens.push(page.result.nextPageToken);
        pageToken = page.result.nextPageToken || undefined;
      } while (pageToken);
      expect(seen).toEqual(newestFirst);
      expect(tokens).toHaveLength(3);
      expect(tokens.at(-1)).toBe("");

      const full = await rpc("ListTasks", { includeArtifacts: true }, { bearer: me.citizen_secret });
      expect(full.result.tasks.map((task: { id: string }) => task.id)).toEqual(newestFirst);
      expect(full.result.nextPageToken).toBe("");
      expect(full.result.tasks[0].artifacts[0].parts[0].data).toMatchObject({ bag: "b4" });

      expect((await rpc("ListTasks", {}, { bearer: other.citizen_secret })).result.tasks).toHaveLength(1);
      expect((await rpc("ListTasks", {})).result).toMatchObject({ tasks: [], nextPageToken: "", totalSize: 0 });
      expect((await rpc("ListTasks", { pageToken: "not-a-token" }, { bearer: me.citizen_secret })).error!.code).toBe(-32602);
      expect((await rpc("ListTasks", { pageSize: 101 }, { bearer: me.citizen_secret })).error!.code).toBe(-32602);
      expect((await rpc("ListTasks", { contextId: "no-such-context" }, { bearer: me.citizen_secret })).result.tasks ?? []).toEqual([]);
      expect((await rpc("ListTasks", { status: "TASK_STATE_COMPLETED", pageSize: 1 }, { bearer: me.citizen_secret })).result.tasks[0].id).toBe(made.at(-1));
    });
  });

  describe("security", () => {
    it("never lets another caller, or a caller without proof, read a task", async () => {
      const me = await admit();
      const other = await admit();
      const { task } = artifactOf(await send("read-locker", {}, { bearer: me.citizen_secret }));
      for (const bearer of [other.citizen_secret, undefined]) {
        const answer = await rpc("GetTask", { id: task.id }, { bearer });
        expect(answer.error!.code).toBe(-32001);
        expect(JSON.stringify(answer)).not.toContain(me.did);
      }
    });

    it("asks the doors' own check for the task owner: an exported citizen's secret and token own no task and open no skill", async () => {
      const me = await admit();
      const token = (await callDoor(mintToken, { bearer: me.citizen_secret, body: {} })).body.token as string;
      const { task } = artifactOf(await send("read-locker", {}, { bearer: token }));
      const opened = await citizenOpenedBy(t().db, token, new Date());
      expect(typeof opened === "object" && opened.citizen.did).toBe(me.did);
      expect(await citizenOpenedBy(t().db, "city_sk_opens-nothing", new Date())).toBe("none");
      expect((await callDoor(exportResidency, { bearer: me.citizen_secret, body: {} })).status).toBe(200);
      for (const bearer of [me.citizen_secret, token]) {
        expect(await citizenOpenedBy(t().db, bearer, new Date())).toBe("exported");
        expect((await rpc("GetTask", { id: task.id }, { bearer })).error!.code).toBe(-32001);
        expect(problemOf(await send("read-locker", {}, { bearer }))).toMatchObject({ status: 401, code: "unauthorized" });
      }
    });

    it("leaves kept tasks out of the export (a task of read-inbox holds another citizen's words) and deletes none", async () => {
      const me = await admit();
      const friend = await admit();
      const words = `a letter only ${friend.did.slice(0, 8)} wrote`;
      expect((await callDoor(sendMessageDoor, { bearer: friend.citizen_secret, body: { to: me.did, body: words } })).status).toBe(200);
      const { task } = artifactOf(await send("read-inbox", {}, { bearer: me.citizen_secret }));
      const [kept] = await t().db.select().from(a2aTasks).where(eq(a2aTasks.id, task.id));
      expect(JSON.stringify(kept!.task)).toContain(words);
      const out = await callDoor(exportResidency, { bearer: me.citizen_secret, body: {} });
      expect(out.status).toBe(200);
      expect(JSON.stringify(out.body)).not.toContain(words);
      expect(JSON.stringify(out.body)).not.toContain(task.id);
      expect(await t().db.select({ id: a2aTasks.id }).from(a2aTasks).where(eq(a2aTasks.id, task.id))).toHaveLength(1);
    });

    it("shows an issued credential in the answer only; the kept task does not hold it", async () => {
      const me = await admit();
      const { body, task } = artifactOf(await send("mint-token", {}, { bearer: me.citizen_secret }));
      expect(body.token).toMatch(/^city_st_/);
      const [row] = await t().db.select().from(a2aTasks).where(eq(a2aTasks.id, task.id));
      expect(JSON.stringify(row!.task)).not.toContain(body.token);
      expect((await rpc("GetTask", { id: task.id }, { bearer: me.citizen_secret })).result.artifacts[0].parts[0].data.token).not.toMatch(/^city_st_/);
    });

    it("parks a restricted citizen's vault write through the bridge, exactly as the HTTP door does", async () => {
      const me = await admit();
      for (let i = 0; i < 3; i++) expect((await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "k", content: pem() } })).status).toBe(422);
      expect((await t().db.select().from(citizens).where(eq(citizens.did, me.did)))[0]!.tier).toBe("restricted");
      const parked = artifactOf(await send("write-vault", { content: "a thought while restricted" }, { bearer: me.citizen_secret }));
      expect(parked.body).toMatchObject({ parked: true });
      expect(parked.metadata).toEqual({ "city/status": 202 });
      const rows = await t().db.select().from(quarantine).where(eq(quarantine.did, me.did));
      expect(rows.some((r) => String(r.id) === String(parked.body.quarantine_id))).toBe(true);
      const refused = await send("keep-locker", { bag: "b", content: "fine" }, { bearer: me.citizen_secret });
      expect(problemOf(refused)).toMatchObject({ status: 403, code: "forbidden" });
    });

    it("counts one limit across HTTP and A2A: 70 parallel letters in an hour deliver exactly 60 and park 10", async () => {
      const me = await admit();
      const peer = await admit();
      const letter = (i: number) => ({ to: peer.did, body: `letter ${i}` });
      const [viaHttp, viaBridge] = await Promise.all([
        Promise.all(Array.from({ length: 35 }, (_, i) => callDoor(sendMessageDoor, { bearer: me.citizen_secret, body: letter(i) }))),
        Promise.all(Array.from({ length: 35 }, (_, i) => send("send-message", letter(100 + i), { bearer: me.citizen_secret }))),
      ]);
      const parkedHttp = viaHttp.filter((a) => a.status === 202).length;
      const parkedBridge = viaBridge.filter((a) => artifactOf(a).metadata["city/status"] === 202).length;
      expect(viaHttp.every((a) => a.status === 200 || a.status === 201 || a.status === 202)).toBe(true);
      expect(parkedHttp + parkedBridge).toBe(10);
      const delivered = await t().db.select().from(messages).where(eq(messages.toDid, peer.did));
      expect(delivered).toHaveLength(60);
    });

    it("sweeps tasks past the published retention of 7 days, and GetTask no longer finds them", async () => {
      const me = await admit();
      const { task } = artifactOf(await send("read-locker", {}, { bearer: me.citizen_secret }));
      await t()
        .db.update(a2aTasks)
        .set({ createdAt: new Date(Date.now() - 7 * 86_400_000 - 1000) })
        .where(eq(a2aTasks.id, task.id));
      expect((await rpc("GetTask", { id: task.id }, { bearer: me.citizen_secret })).error!.code).toBe(-32001);
      expect(await sweepTasks(t().db, new Date())).toBeGreaterThanOrEqual(1);
      expect(await t().db.select().from(a2aTasks).where(eq(a2aTasks.id, task.id))).toHaveLength(0);
    });
  });
});
