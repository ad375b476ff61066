import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { a2aTasks } from "@/db/schema";
import { A2A_TASK_MAX_BYTES, A2A_TASKS_PER_OWNER, keepTask, taskOwnerHash } from "@/lib/city/a2a";
import { forgetSigningKey } from "@/lib/city/signing";
import { serveA2a } from "@/lib/doors/surfaces/a2a-server";
import { buildLlmsTxt } from "@/lib/doors/surfaces/llms";
import { buildOpenApi } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";
import { describeOnDatabases } from "../support/databases";
import { admit } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

let ids = 0;

async function rpc(method: string, params: unknown, bearer?: string) {
  const headers: Record<string, string> = { "content-type": "application/json", "a2a-version": "1.0" };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const response = await serveA2a(
    new Request("http://city.test/api/a2a", { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: ++ids, method, params }) }),
  );
  expect(response.status).toBe(200);
  return (await response.json()) as { result?: any; error?: { code: number; message: string; data?: any } };
}

function send(skill: string, fields: Record<string, unknown>, bearer: string, message: Record<string, unknown> = {}) {
  return rpc(
    "SendMessage",
    { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ data: { skill, ...fields }, mediaType: "application/json" }], ...message } },
    bearer,
  );
}

const padding = (bytes: number) => "x".repeat(bytes);

describeOnDatabases("A2A tasks hold bounded bytes", (t) => {
  beforeAll(() => {
    useDatabase(t().db);
    forgetSigningKey();
  });

  const tasksOf = async (did: string) =>
    await t()
      .db.select({ id: a2aTasks.id, bytes: sql<number>`octet_length(${a2aTasks.task}::text)`.mapWith(Number), task: a2aTasks.task })
      .from(a2aTasks)
      .where(eq(a2aTasks.ownerHash, taskOwnerHash(did)));

  it("refuses a field the skill's door does not name, on reading and writing skills alike, and keeps no task", async () => {
    const me = await admit();
    for (const [skill, fields] of [
      ["read-locker", { padded: padding(100_000) }],
      ["list-peers", { present: "1", extra: 1 }],
      ["keep-locker", { bag: "b", content: "c", pad: "x" }],
    ] as const) {
      const answer = await send(skill, fields, me.citizen_secret);
      expect(answer.error?.code, skill).toBe(-32602);
      const problem = (answer.error!.data as Record<string, unknown>[]).find((d) => d["@type"] === "https://www.rfc-editor.org/rfc/rfc9457")!;
      expect(problem).toMatchObject({ status: 400, code: "bad_request" });
      expect(String(problem.detail)).toMatch(/Unknown field/);
      expect(String(problem.detail).length).toBeLessThan(400);
    }
    expect(await tasksOf(me.did)).toHaveLength(0);
  });

  it("keeps no history: a padded message (metadata, extensions) leaves a small kept task", async () => {
    const me = await admit();
    const answer = await send("read-locker", {}, me.citizen_secret, { metadata: { pad: padding(300_000) }, extensions: [padding(50_000)] });
    expect(answer.error).toBeUndefined();
    const [kept] = await tasksOf(me.did);
    expect(kept!.bytes).toBeLessThan(4_096);
    expect(kept!.task.history ?? []).toEqual([]);
    const back = await rpc("GetTask", { id: answer.result.task.id }, me.citizen_secret);
    expect(back.result.id).toBe(answer.result.task.id);
    expect(JSON.stringify(back.result)).not.toContain(padding(1000));
  });

  it("refuses a contextId longer than 200 characters (it would be kept with the task)", async () => {
    const me = await admit();
    const answer = await send("read-locker", {}, me.citizen_secret, { contextId: padding(201) });
    expect(answer.error?.code).toBe(-32602);
    expect(await tasksOf(me.did)).toHaveLength(0);
  });

  it("keeps a large answer out of the kept task: at most the published bytes, with a note", async () => {
    const me = await admit();
    expect((await send("keep-locker", { bag: "big", content: padding(200_000) }, me.citizen_secret)).error).toBeUndefined();
    const answer = await send("read-locker-bag", { bag: "big" }, me.citizen_secret);
    expect(answer.result.task.artifacts[0].parts[0].data.content).toHaveLength(200_000);
    const kept = (await tasksOf(me.did)).find((k) => k.id === answer.result.task.id)!;
    expect(kept.bytes).toBeLessThanOrEqual(A2A_TASK_MAX_BYTES);
    const back = await rpc("GetTask", { id: answer.result.task.id }, me.citizen_secret);
    expect(back.result.artifacts[0].metadata["city/not-kept"]).toBe(true);
    expect(back.result.artifacts[0].parts[0].text).toMatch(/given once/);
  });

  it(`caps one citizen's kept tasks at ${A2A_TASKS_PER_OWNER}: the oldest go, so the table cannot grow past the bound`, async () => {
    const me = await admit();
    const first = await send("read-locker", {}, me.citizen_secret);
    // The tasks between the door's first and its last five are kept as the door keeps them (its
    // keepTask, with the door's own task as stored, the owner's hash, the citizen, the time of the
    // call) rather than through 99 more calls of the door: the cap is counted in keepTask, under
    // the owner's lock, and the door's own keeps come first and last (105 door calls took 15 to 30
    // s on a busy machine).
    const [door] = await tasksOf(me.did);
    for (let i = 0; i < A2A_TASKS_PER_OWNER - 1; i++) {
      const id = crypto.randomUUID();
      await keepTask(t().db, id, taskOwnerHash(me.did), { ...(door!.task as Record<string, unknown>), id }, new Date(), me.did);
    }
    expect(await tasksOf(me.did)).toHaveLength(A2A_TASKS_PER_OWNER);
    for (let i = 0; i < 5; i++) expect((await send("read-locker", {}, me.citizen_secret)).error).toBeUndefined();
    const kept = await tasksOf(me.did);
    expect(kept).toHaveLength(A2A_TASKS_PER_OWNER);
    expect(kept.reduce((sum, k) => sum + k.bytes, 0)).toBeLessThanOrEqual(A2A_TASKS_PER_OWNER * A2A_TASK_MAX_BYTES);
    expect(kept.map((k) => k.id)).not.toContain(first.result.task.id);
    expect((await rpc("GetTask", { id: first.result.task.id }, me.citizen_secret)).error?.code).toBe(-32001);
  }, 180_000);

  it("holds the cap under parallel keeps of one owner (counted under the owner's lock in the write's transaction)", async () => {
    const owner = taskOwnerHash(`did:city:parallel-${crypto.randomUUID()}`);
    const now = new Date();
    await Promise.all(
      Array.from({ length: A2A_TASKS_PER_OWNER + 40 }, (_, i) =>
        keepTask(t().db, crypto.randomUUID(), owner, { id: `t${i}`, history: [{ pad: padding(10_000) }] }, now),
      ),
    );
    const [row] = await t()
      .db.select({ n: sql<number>`count(*)`.mapWith(Number), max: sql<number>`max(octet_length(${a2aTasks.task}::text))`.mapWith(Number) })
      .from(a2aTasks)
      .where(eq(a2aTasks.ownerHash, owner));
    expect(row!.n).toBe(A2A_TASKS_PER_OWNER);
    expect(row!.max).toBeLessThan(200);
  }, 120_000);

  it("publishes the cap and the byte bound (bridge description, OpenAPI, llms.txt)", async () => {
    const describe = registry.find((d) => d.name === "describe-a2a")!;
    expect(describe.limits).toEqual([
      expect.objectContaining({ name: "a2a_tasks_kept", limit: A2A_TASKS_PER_OWNER, over: "oldest removed" }),
      // The city-wide bounds of the kept tasks' store (issue 29, item 1), defaults.
      expect.objectContaining({ name: "city_a2a_tasks_bytes", limit: 536_870_912, over: "refused" }),
      expect.objectContaining({ name: "city_a2a_tasks_bytes_per_hour", limit: 33_554_432, window_seconds: 3600, over: "refused" }),
      expect.objectContaining({ name: "city_a2a_tasks_newcomer_bytes_per_hour", limit: 8_388_608, window_seconds: 3600, over: "refused" }),
      // Issue 43: the newcomers' line of the total (a fifth is the reserve) and one subject's share of the hour; no own total (tasks are swept).
      expect.objectContaining({ name: "city_a2a_tasks_newcomer_bytes", limit: 429_496_729, over: "refused" }),
      expect.objectContaining({ name: "city_a2a_tasks_subject_bytes_per_hour", limit: 419_430, window_seconds: 3600, over: "refused" }),
      // One network's citizens together, a tenth of the hour; no network total either.
      expect.objectContaining({ name: "city_a2a_tasks_network_bytes_per_hour", limit: 3_355_443, window_seconds: 3600, over: "refused" }),
    ]);
    const doc = buildOpenApi(registry, "https://city.test") as { paths: Record<string, Record<string, Record<string, unknown>>> };
    expect(doc.paths["/api/a2a"]!.get!["x-city-limits"]).toEqual(describe.limits);
    expect(buildLlmsTxt(registry, "https://city.test")).toContain(`${A2A_TASKS_PER_OWNER} a2a_tasks_kept per citizen`);
  });
});
