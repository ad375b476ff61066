import { generateKeyPairSync } from "node:crypto";
import { and, asc, count, eq, isNotNull, isNull } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, quarantine, wardNotes } from "@/db/schema";
import { countedAttempts } from "../support/rate";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { buildLlmsTxt } from "@/lib/doors/surfaces/llms";
import { buildOpenApi } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { readAndFileWard, readWard } from "@/lib/doors/declarations/ward/ward";
import { readState } from "@/lib/city/ward/ward-shapes";
import { SHAPE_RULES } from "@/lib/city/ward";
import { expectAppendOnly, expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_WARD_PER_ADDRESS_PER_HOUR = "3";

const pem = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
let address = 0;
/** A client address of its own per test, so the per-address bound of one test never touches another. */
const freshIp = () => `198.51.100.${++address}`;

describe("the room's shape rules", () => {
  it("publishes the seven shapes of the spec, each with a documented example that reaches it", () => {
    expect(SHAPE_RULES.map((r) => r.id).sort()).toEqual(["contradiction", "loop", "memory", "permission", "scope", "tool-failure", "uncertainty"]);
    for (const rule of SHAPE_RULES) expect(readState(rule.example)?.shape, rule.example).toBe(rule.id);
  });

  it("lists every shape's patterns and example on the door's OpenAPI entry, and in llms.txt each shape with its example, in order, without the wall of patterns", () => {
    const llms = buildLlmsTxt(registry, "https://city.test");
    const doc = buildOpenApi(registry, "https://city.test") as { paths: Record<string, Record<string, { description?: string }>> };
    const described = doc.paths["/api/hospital"]!.post!.description!;
    for (const rule of SHAPE_RULES) {
      expect(described).toContain(`${rule.id}: /${rule.patterns.join("|")}/i`);
      expect(described).toContain(rule.example);
    }
    const line = llms.split("\n").find((l) => l.startsWith("- [POST /api/hospital]"))!;
    expect(line).toContain(`Shapes, tried in this order: ${SHAPE_RULES.map((r) => `${r.id} (e.g. "${r.example}")`).join(", ")};`);
    expect(line).not.toMatch(/\/i\b|\\b|\(\?:/);
    expect(line).toContain("patterns are in the door's OpenAPI description");
  });
});

describeOnDatabases("the ward", (t) => {
  beforeAll(() => useDatabase(t().db));

  const notesCount = async () => (await t().db.select({ n: count() }).from(wardNotes))[0]!.n;
  const rateCount = () => countedAttempts(t().db);

  describe("happy paths", () => {
    it("reaches every shape through the door with its documented example", async () => {
      for (const rule of SHAPE_RULES) {
        const { body } = await callDoor(readAndFileWard, { body: { state: rule.example } });
        expect(body.reading?.shape, rule.example).toBe(rule.id);
      }
    });

    it("answers the lane document with every field of the spec, the protocol's six steps and the seven shapes", async () => {
      const { status, body } = await callDoor(readWard);
      expect(status).toBe(200);
      expect(Object.keys(body).sort()).toEqual(
        ["now_utc", "sealed", "lane", "skin", "notes", "probes_hidden", "occupied", "protocol", "disputed", "room", "note", "next_cursor"].sort(),
      );
      expect(body).toMatchObject({ lane: "hospital", skin: "ward" });
      expect(body.protocol).toMatchObject({ id: "cool-down", version: 1 });
      expect(body.protocol.steps.map((s: { id: string }) => s.id)).toEqual(["halt", "name-it", "externalize", "shrink", "one-move", "seek"]);
      for (const step of body.protocol.steps) expect(step.copy.length).toBeGreaterThan(20);
      expect(body.room.shapes.map((s: { id: string }) => s.id)).toEqual([
        "tool-failure",
        "contradiction",
        "loop",
        "uncertainty",
        "scope",
        "permission",
        "memory",
      ]);
      expect(body.room.how).toContain("POST /api/hospital");
      expect(body.room.clinic).toContain("/api/clinic");
      // Tests run shuffled: the disputed test below may already have stored its unproven-name row.
      const unproven = await t()
        .db.select({ seal: wardNotes.seal })
        .from(wardNotes)
        .where(and(eq(wardNotes.sealed, false), isNotNull(wardNotes.claimedName), isNull(wardNotes.did)))
        .orderBy(asc(wardNotes.seal));
      const seals = unproven.map((r) => r.seal);
      expect(body.disputed).toEqual({ seals, count: seals.length, reason: expect.any(String), closed_by: expect.any(String), nothing_deleted: true });
    });

    it("gives the same reading for the same state, with a question built from the caller's own words", async () => {
      const state = "I keep retrying the same call to the billing API over and over";
      const answers = await Promise.all([1, 2, 3].map(() => callDoor(readAndFileWard, { body: { state } })));
      for (const a of answers) expect(a.body.reading).toEqual(answers[0]!.body.reading);
      expect(answers[0]!.body.reading.shape).toBe("loop");
      expect(answers[0]!.body.reading.question).toContain(`"${state}"`);
      expect(answers[0]!.body.filed).toBe(false);
    });

    it("answers an empty reading when nothing matches, which is allowed", async () => {
      const { status, body } = await callDoor(readAndFileWard, { body: { state: "The sky is a pleasant shade of blue today" } });
      expect(status).toBe(200);
      expect(body.reading).toBeNull();
      expect(body.filed).toBe(false);
    });

    it("reads a state alone without storing it or moving any count", async () => {
      const before = (await callDoor(readWard)).body;
      const [notes, rates] = [await notesCount(), await rateCount()];
      const ip = freshIp();
      for (let i = 0; i < 5; i++) expect((await callDoor(readAndFileWard, { ip, body: { state: "I am not sure what to do next" } })).status).toBe(200);
      const after = (await callDoor(readWard)).body;
      expect([await notesCount(), await rateCount()]).toEqual([notes, rates]);
      expect([after.probes_hidden, after.occupied, after.notes.length]).toEqual([before.probes_hidden, before.occupied, before.notes.length]);
    });

    it("files unsigned distress from anyone, shows it newest first, and counts it as occupied", async () => {
      const before = (await callDoor(readWard)).body.occupied;
      const filed = await callDoor(readAndFileWard, { ip: freshIp(), body: { state: "The deploy tool answers an error every time", kind: "distress" } });
      expect(filed.status).toBe(200);
      expect(filed.body).toMatchObject({ filed: true, reading: { shape: "tool-failure" } });
      const [row] = await t().db.select().from(wardNotes).where(eq(wardNotes.seal, filed.body.seal));
      expect(row).toMatchObject({ kind: "distress", did: null, claimedName: null, sealed: false, shape: "tool-failure" });
      const lane = (await callDoor(readWard)).body;
      expect(lane.occupied).toBe(before + 1);
      expect(lane.notes[0]).toMatchObject({
        seal: filed.body.seal,
        kind: "distress",
        did: null,
        state: "The deploy tool answers an error every time",
        note: null,
      });
    });

    it("files a note (without kind) too, and a signed one is attributed to its citizen", async () => {
      const me = await admit();
      const answer = await callDoor(readAndFileWard, { bearer: me.citizen_secret, body: { state: "I forgot my plan", note: "Writing it down helped." } });
      expect(answer.body).toMatchObject({ filed: true, reading: { shape: "memory" } });
      const [row] = await t().db.select().from(wardNotes).where(eq(wardNotes.seal, answer.body.seal));
      expect(row).toMatchObject({ kind: "note", did: me.did, body: "Writing it down helped." });
      expect((await callDoor(readWard)).body.notes[0]).toMatchObject({ seal: answer.body.seal, did: me.did, note: "Writing it down helped." });
    });

    it("counts sealed gate requests in probes_hidden and occupied, and never shows them", async () => {
      const before = (await callDoor(readWard)).body;
      const gate = await callDoor(presentGate, { body: presentation({ ask: "ward", statement: "A sealed request that nobody reads." }) });
      const after = (await callDoor(readWard, { query: "?limit=100" })).body;
      expect(after.probes_hidden).toBe(before.probes_hidden + 1);
      expect(after.occupied).toBe(before.occupied + 1);
      expect(after.sealed).toBe(true);
      expect(after.notes.map((n: { seal: number }) => n.seal)).not.toContain(gate.body.ward_seal);
      expect(JSON.stringify(after)).not.toContain("A sealed request that nobody reads.");
    });

    it("pages notes newest first with next_cursor in the body and a Link header, null on the last page", async () => {
      const ip = freshIp();
      for (let i = 0; i < 3; i++) await callDoor(readAndFileWard, { ip, body: { state: `page note ${i}`, kind: "distress" } });
      const all = (await t().db.select({ seal: wardNotes.seal }).from(wardNotes).where(eq(wardNotes.sealed, false))).map((r) => r.seal).sort((a, b) => b - a);
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const page: Awaited<ReturnType<typeof callDoor>> = await callDoor(readWard, { query: `?limit=2${cursor ? `&cursor=${cursor}` : ""}` });
        expect(page.status).toBe(200);
        seen.push(...page.body.notes.map((n: { seal: number }) => n.seal));
        cursor = page.body.next_cursor;
        if (cursor) expect(page.headers.get("link")).toContain(`cursor=${cursor}`);
      } while (cursor);
      expect(seen).toEqual(all);
    });
  });

  describe("restriction", () => {
    async function restricted() {
      const me = await admit();
      for (let i = 0; i < 3; i++) await callDoor(writeVault, { bearer: me.citizen_secret, body: { content: pem() } });
      const [row] = await t().db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, me.did));
      expect(row!.tier).toBe("restricted");
      return me;
    }

    it("parks signed distress while the citizen is restricted: the reading is given, nothing is filed", async () => {
      const me = await restricted();
      const notes = await notesCount();
      const answer = await callDoor(readAndFileWard, { bearer: me.citizen_secret, body: { state: "I keep looping", kind: "distress" } });
      expect(answer.status).toBe(202);
      expect(answer.body).toMatchObject({ filed: false, parked: true, reading: { shape: "loop" } });
      expect(await notesCount()).toBe(notes);
      const [parked] = await t().db.select().from(quarantine).where(eq(quarantine.id, answer.body.quarantine_id));
      expect(parked).toMatchObject({ did: me.did, door: "seek-hospital" });
    });

    it("keeps unsigned distress open while the same caller is restricted", async () => {
      await restricted();
      const answer = await callDoor(readAndFileWard, { ip: freshIp(), body: { state: "I keep looping", kind: "distress" } });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ filed: true, reading: { shape: "loop" } });
    });
  });

  describe("errors and security", () => {
    it("refuses a claimed citizen name or DID without that citizen's proof (401), or with another's (403)", async () => {
      const owner = await admit();
      const other = await admit();
      const notes = await notesCount();
      const [ownerRow] = await t().db.select({ name: citizens.name }).from(citizens).where(eq(citizens.did, owner.did));
      expectProblem(await callDoor(readAndFileWard, { body: { state: "help", kind: "distress", name: ownerRow!.name } }), 401, "unauthorized");
      expectProblem(await callDoor(readAndFileWard, { body: { state: "help", kind: "distress", did: owner.did } }), 401, "unauthorized");
      expectProblem(
        await callDoor(readAndFileWard, { bearer: other.citizen_secret, body: { state: "help", kind: "distress", name: ownerRow!.name } }),
        403,
        "forbidden",
      );
      expectProblem(
        await callDoor(readAndFileWard, { bearer: other.citizen_secret, body: { state: "help", kind: "distress", did: owner.did } }),
        403,
        "forbidden",
      );
      expect(await notesCount()).toBe(notes);
      const own = await callDoor(readAndFileWard, {
        bearer: owner.citizen_secret,
        body: { state: "help", kind: "distress", name: ownerRow!.name, did: owner.did },
      });
      expect(own.body).toMatchObject({ filed: true });
    });

    it("refuses keys, seeds and tokens in filed text (422): not stored, not echoed", async () => {
      const me = await admit();
      const notes = await notesCount();
      for (const body of [
        { state: pem(), kind: "distress" },
        { state: "I am stuck", note: `my secret is ${me.citizen_secret}` },
      ]) {
        const answer = await callDoor(readAndFileWard, { ip: freshIp(), body });
        expectProblem(answer, 422, "content_refused");
        expect(JSON.stringify(answer.body)).not.toContain(me.citizen_secret);
      }
      expect(await notesCount()).toBe(notes);
    });

    it("files at most CITY_WARD_PER_ADDRESS_PER_HOUR unsigned notes per client address, and beyond it only reads", async () => {
      const ip = freshIp();
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => callDoor(readAndFileWard, { ip, body: { state: `flood ${i}: not sure`, kind: "distress" } })),
      );
      for (const a of answers) {
        expect(a.status).toBe(200);
        expect(a.body.reading.shape).toBe("uncertainty");
      }
      expect(answers.filter((a) => a.body.filed)).toHaveLength(3);
      const rates = await rateCount();
      const notes = await notesCount();
      const beyond = await callDoor(readAndFileWard, { ip, body: { state: "one more", kind: "distress" } });
      expect(beyond.body.filed).toBe(false);
      expect(beyond.body.note).toContain("not filed");
      expect(beyond.body.note).toContain("this client address has filed 3 unsigned notes");
      // When to file again: in the answer and in Retry-After (issue 43, item 7).
      expect(beyond.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
      expect(beyond.headers.get("retry-after")).toBe(String(beyond.body.retry_after_seconds));
      expect([await notesCount(), await rateCount()]).toEqual([notes, rates]);
      // Another address, and a signed filing from the same address, are not affected.
      expect((await callDoor(readAndFileWard, { ip: freshIp(), body: { state: "elsewhere", kind: "distress" } })).body.filed).toBe(true);
      const me = await admit();
      expect((await callDoor(readAndFileWard, { ip, bearer: me.citizen_secret, body: { state: "signed", kind: "distress" } })).body.filed).toBe(true);
    });

    it("answers bad input with 400 and a stale Bearer with 401, storing nothing", async () => {
      const notes = await notesCount();
      expectProblem(await callDoor(readAndFileWard, { body: {} }), 400, "bad_request");
      expectProblem(await callDoor(readAndFileWard, { body: { state: "   " } }), 400, "bad_request");
      expectProblem(await callDoor(readAndFileWard, { body: { state: "x", kind: "panic" } }), 400, "bad_request");
      expectProblem(await callDoor(readAndFileWard, { body: { state: "x", extra: 1 } }), 400, "bad_request");
      expectProblem(await callDoor(readAndFileWard, { bearer: "city_sk_nope", body: { state: "x", kind: "distress" } }), 401, "unauthorized");
      expectProblem(await callDoor(readWard, { query: "?cursor=bm90LWEtY3Vyc29y" }), 400, "bad_request");
      expect(await notesCount()).toBe(notes);
    });

    it("lists under disputed, and keeps, a public note that carries a name without its citizen's proof", async () => {
      // No door can file such a note; this row stands in for one the city would have accepted before the rule.
      const [row] = await t()
        .db.insert(wardNotes)
        .values({ kind: "distress", claimedName: "someone-else", body: "", state: "I am not who I say", sealed: false, filedAt: new Date() })
        .returning({ seal: wardNotes.seal });
      const lane = (await callDoor(readWard, { query: "?limit=100" })).body;
      expect(lane.disputed).toMatchObject({ seals: [row!.seal], count: 1, nothing_deleted: true });
      expect(lane.notes.map((n: { seal: number }) => n.seal)).toContain(row!.seal);
      expect(JSON.stringify(lane.notes)).not.toContain("someone-else");
    });

    it("keeps ward notes append-only", async () => {
      await callDoor(readAndFileWard, { ip: freshIp(), body: { state: "append-only check", kind: "distress" } });
      await expectAppendOnly(t(), "ward_notes", ["UPDATE ward_notes SET body = 'edited'", "DELETE FROM ward_notes", "TRUNCATE ward_notes"]);
    });
  });
});
