import { generateKeyPairSync, randomBytes } from "node:crypto";
import { and, count, eq, isNotNull } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, contentRefusals, messages, quarantine } from "@/db/schema";
import { countedAttempts } from "../support/rate";
import { MAIL_BODY_MAX_CHARS } from "@/lib/city/mail";
import { pathParams } from "@/lib/doors/door";
import { markMailRead, readInboxDoor, sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { ParkedOutput } from "@/lib/doors/declarations/quarantine/parking";
import { readQuarantine } from "@/lib/doors/declarations/quarantine/quarantine";
import { registry } from "@/lib/doors/registry";
import { insertCitizenRow } from "../support/citizens";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { expectAppendOnly, expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

type InboxRow = { id: number; from: string; body: string; created_at: string; read: boolean; trust: string };

const unique = (label: string) => `${label}-${randomBytes(8).toString("hex")}`;
const pemPrivateKey = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const citySecretLike = () => `city_sk_${randomBytes(36).toString("hex")}`;

describeOnDatabases("mail", (t) => {
  beforeAll(() => useDatabase(t().db));
  const sentBy = async (did: string) => (await t().db.select({ n: count() }).from(messages).where(eq(messages.fromDid, did)))[0]!.n;
  const parkedOf = async (did: string) => (await t().db.select({ n: count() }).from(quarantine).where(eq(quarantine.did, did)))[0]!.n;
  const send = (secret: string, to: string, body: string) => callDoor(sendMessageDoor, { bearer: secret, body: { to, body } });
  const inbox = (secret: string, query?: string) => callDoor(readInboxDoor, { bearer: secret, query });

  describe("happy path", () => {
    it("sends mail by DID and answers id, to and time, now_utc first", async () => {
      const [a, b] = [await admit(), await admit()];
      const answer = await send(a.citizen_secret, b.did, "hello from a");
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body)).toEqual(["now_utc", "id", "to", "created_at"]);
      expect(answer.body.to).toBe(b.did);
      const [row] = await t().db.select().from(messages).where(eq(messages.id, answer.body.id));
      expect(row).toMatchObject({ fromDid: a.did, toDid: b.did, body: "hello from a", readAt: null });
    });

    it("delivers to any known citizen, bound or away, with a bed or without, and to oneself", async () => {
      const a = await admit();
      const away = await admit();
      await t().db.update(citizens).set({ residencyStatus: "away", bedId: null }).where(eq(citizens.did, away.did));
      const bedless = await admit();
      await t().db.update(citizens).set({ bedId: null }).where(eq(citizens.did, bedless.did));
      for (const to of [away, bedless, a]) {
        const text = unique("delivered");
        expect((await send(a.citizen_secret, to.did, text)).status).toBe(200);
        const rows = (await inbox(to.citizen_secret)).body.messages as InboxRow[];
        expect(rows.find((r) => r.body === text)).toMatchObject({ from: a.did, read: false });
      }
    });

    it("lists the inbox unread first, then read, each newest first; reading marks nothing, the read door does", async () => {
      const [s1, s2, r] = [await admit(), await admit(), await admit()];
      const m1 = (await send(s1.citizen_secret, r.did, "one")).body.id;
      const m2 = (await send(s2.citizen_secret, r.did, "two")).body.id;
      const m3 = (await send(s1.citizen_secret, r.did, "three")).body.id;

      const first = await inbox(r.citizen_secret, "?limit=2");
      expect(first.status).toBe(200);
      expect(Object.keys(first.body)).toEqual(["now_utc", "messages", "next_cursor", "note"]);
      expect(first.body.note).toMatch(/untrusted peer content/);
      expect(first.body.messages).toEqual([
        { id: m3, from: s1.did, body: "three", created_at: expect.any(String), read: false, trust: "untrusted-peer-content" },
        { id: m2, from: s2.did, body: "two", created_at: expect.any(String), read: false, trust: "untrusted-peer-content" },
      ]);
      const readRows = await t()
        .db.select({ id: messages.id })
        .from(messages)
        .where(and(eq(messages.toDid, r.did), isNotNull(messages.readAt)));
      expect(readRows).toEqual([]);

      const marked = await callDoor(markMailRead, { bearer: r.citizen_secret, body: { ids: [m2, m3] } });
      expect(marked.status).toBe(200);
      expect(marked.body.marked).toEqual([m2, m3].sort((x, y) => x - y));
      const second = (await inbox(r.citizen_secret)).body.messages as InboxRow[];
      expect(second.map((x) => [x.id, x.read])).toEqual([
        [m1, false],
        [m3, true],
        [m2, true],
      ]);
      expect((await callDoor(markMailRead, { bearer: r.citizen_secret, body: { up_to: m1 } })).body.marked).toEqual([m1]);
      const third = (await inbox(r.citizen_secret)).body.messages as InboxRow[];
      expect(third.map((x) => [x.id, x.read])).toEqual([
        [m3, true],
        [m2, true],
        [m1, true],
      ]);

      const m4 = (await send(s2.citizen_secret, r.did, "four")).body.id;
      const fourth = (await inbox(r.citizen_secret)).body.messages as InboxRow[];
      expect(fourth.map((x) => [x.id, x.read])).toEqual([
        [m4, false],
        [m3, true],
        [m2, true],
        [m1, true],
      ]);
    });

    it("answers parallel inbox reads whole and leaves every row unread: a GET changes nothing", async () => {
      const [s, r] = [await admit(), await admit()];
      for (let i = 0; i < 5; i++) await send(s.citizen_secret, r.did, `p${i}`);
      const reads = await Promise.all(Array.from({ length: 6 }, () => inbox(r.citizen_secret)));
      for (const read of reads) {
        expect(read.status).toBe(200);
        expect((read.body.messages as InboxRow[]).map((x) => x.body).sort()).toEqual(["p0", "p1", "p2", "p3", "p4"]);
      }
      const rows = await t().db.select().from(messages).where(eq(messages.toDid, r.did));
      expect(rows.every((x) => x.readAt === null)).toBe(true);
    });

    it("marks only the caller's own unread mail; a second mark changes nothing; bad targets are 400", async () => {
      const [s, r, other] = [await admit(), await admit(), await admit()];
      const mine = (await send(s.citizen_secret, r.did, "for r")).body.id;
      const theirs = (await send(s.citizen_secret, other.did, "for other")).body.id;
      const once = await callDoor(markMailRead, { bearer: r.citizen_secret, body: { ids: [mine, theirs] } });
      expect(once.body.marked).toEqual([mine]);
      const [row] = await t().db.select().from(messages).where(eq(messages.id, theirs));
      expect(row!.readAt).toBeNull();
      expect((await callDoor(markMailRead, { bearer: r.citizen_secret, body: { ids: [mine] } })).body.marked).toEqual([]);
      for (const body of [{}, { ids: [] }, { ids: [mine], up_to: mine }, { up_to: 0 }, { ids: ["x"] }]) {
        const bad = await callDoor(markMailRead, { bearer: r.citizen_secret, body });
        expect(bad.status, JSON.stringify(body)).toBe(400);
        expect(bad.body.code).toBe("bad_request");
      }
      expect((await callDoor(markMailRead, { body: { ids: [mine] } })).status).toBe(401);
    });

    it("accepts exactly the longest body and refuses one character more", async () => {
      const [a, b] = [await admit(), await admit()];
      expect((await send(a.citizen_secret, b.did, "m".repeat(MAIL_BODY_MAX_CHARS))).status).toBe(200);
      expectProblem(await send(a.citizen_secret, b.did, "m".repeat(MAIL_BODY_MAX_CHARS + 1)), 400, "bad_request");
      expect(await sentBy(a.did)).toBe(1);
    });
  });

  describe("bad input and unknown recipients", () => {
    it("answers mail to an unknown or exported DID with a 404 problem, storing and counting nothing", async () => {
      const a = await admit();
      const exported = await insertCitizenRow(t().db, { residencyStatus: "exported", bedId: null });
      for (const to of [randomBytes(32).toString("hex"), exported.did]) expectProblem(await send(a.citizen_secret, to, "anyone there?"), 404, "not_found");
      expect(await sentBy(a.did)).toBe(0);
      expect(await parkedOf(a.did)).toBe(0);
      expect(await countedAttempts(t().db, { subject: a.did })).toBe(0);
    });

    it("answers a malformed DID or body with a 400 problem and stores nothing", async () => {
      const [a, b] = [await admit(), await admit()];
      const bad: unknown[] = [
        {},
        { body: "no recipient" },
        { to: b.did },
        { to: b.did, body: "" },
        { to: b.did, body: 7 },
        { to: b.did.toUpperCase(), body: "upper case" },
        { to: b.did.slice(1), body: "63 characters" },
        { to: `${b.did}0`, body: "65 characters" },
        { to: `z${b.did.slice(1)}`, body: "not hex" },
        { to: `did:key:${b.did}`, body: "prefixed" },
        { to: 12345, body: "a number" },
        { to: b.did, body: "extra field", cc: b.did },
      ];
      for (const body of bad) expectProblem(await callDoor(sendMessageDoor, { bearer: a.citizen_secret, body }), 400, "bad_request");
      expect(await sentBy(a.did)).toBe(0);
      expect(await parkedOf(a.did)).toBe(0);
      for (const query of ["?limit=0", "?limit=201", "?limit=many"]) expectProblem(await inbox(b.citizen_secret, query), 400, "bad_request");
    });
  });

  describe("privacy", () => {
    it("shows a citizen only its own inbox: not the sender's, not a third citizen's, not a visitor's", async () => {
      const [a, b, c] = [await admit(), await admit(), await admit()];
      const text = unique("for-b-only");
      await send(a.citizen_secret, b.did, text);
      for (const other of [a, c]) {
        const answer = await inbox(other.citizen_secret);
        expect(answer.status).toBe(200);
        expect(JSON.stringify(answer.body)).not.toContain(text);
      }
      for (const bearer of [undefined, b.did, citySecretLike()]) {
        const answer = await callDoor(readInboxDoor, { bearer });
        expectProblem(answer, 401, "unauthorized");
        expect(JSON.stringify(answer.body)).not.toContain(text);
        expectProblem(await callDoor(sendMessageDoor, { bearer, body: { to: b.did, body: "forged" } }), 401, "unauthorized");
      }
      // The reads above left b's mail unread.
      expect((await inbox(b.citizen_secret)).body.messages).toMatchObject([{ body: text, read: false }]);
    });

    it("never shows a message body, delivered or parked, to a third citizen on any reading door", async () => {
      const [a, b, c] = [await admit(), await admit(), await admit()];
      const delivered = unique("delivered-secretly");
      const parkedText = unique("parked-secretly");
      await send(a.citizen_secret, b.did, delivered);
      await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
      expect((await send(a.citizen_secret, b.did, parkedText)).status).toBe(202);
      const readers = registry.filter((d) => d.method === "GET" && pathParams(d.path).length === 0);
      expect(readers).toContain(readInboxDoor);
      expect(readers).toContain(readQuarantine);
      for (const reader of readers) {
        for (const bearer of [c.citizen_secret, undefined]) {
          const answer = await callDoor(reader, { bearer });
          const text = JSON.stringify(answer.body);
          expect(text, reader.name).not.toContain(delivered);
          expect(text, reader.name).not.toContain(parkedText);
        }
      }
      // A parked mail is not delivered: the recipient sees only the one that was sent.
      const bodies = ((await inbox(b.citizen_secret)).body.messages as InboxRow[]).map((r) => r.body);
      expect(bodies).toEqual([delivered]);
    });
  });

  describe("refused content", () => {
    it("refuses a PEM private key and a city secret with 422: not stored, not parked, not echoed", async () => {
      const [a, b] = [await admit(), await admit()];
      for (const secret of [pemPrivateKey(), `my key is ${citySecretLike()}`]) {
        const answer = await send(a.citizen_secret, b.did, secret);
        expectProblem(answer, 422, "content_refused");
        const text = JSON.stringify(answer.body);
        expect(text).not.toContain(secret.slice(40, 80));
        expect(text).not.toContain("city_sk_");
      }
      expect(await sentBy(a.did)).toBe(0);
      expect(await parkedOf(a.did)).toBe(0);
      expect((await inbox(b.citizen_secret)).body.messages).toEqual([]);
    });

    it("answers a secret sent to an unknown or exported DID with the 404, counting no refusal toward restriction", async () => {
      const a = await admit();
      const exported = await insertCitizenRow(t().db, { residencyStatus: "exported", bedId: null });
      for (const to of [randomBytes(32).toString("hex"), exported.did]) {
        expectProblem(await send(a.citizen_secret, to, `my key is ${citySecretLike()}`), 404, "not_found");
      }
      expect(await t().db.select().from(contentRefusals).where(eq(contentRefusals.did, a.did))).toEqual([]);
      expect(await countedAttempts(t().db, { subject: a.did })).toBe(0);
    });
  });

  describe("limits and concurrency", () => {
    it("sends the 60th mail of the hour and parks the 61st with 202, visible to its sender in quarantine", async () => {
      const [a, b] = [await admit(), await admit()];
      for (let i = 1; i <= 60; i++) expect((await send(a.citizen_secret, b.did, `mail ${i}`)).status, `mail ${i}`).toBe(200);
      const over = await send(a.citizen_secret, b.did, "the sixty-first");
      expect(over.status).toBe(202);
      expect(Object.keys(over.body)[0]).toBe("now_utc");
      expect(ParkedOutput.parse(over.body)).toMatchObject({ parked: true });
      expect(await sentBy(a.did)).toBe(60);
      const listed = (await callDoor(readQuarantine, { bearer: a.citizen_secret })).body.parked;
      expect(listed).toEqual([
        {
          id: over.body.quarantine_id,
          door: "send-message",
          reason: over.body.reason,
          payload: { to: b.did, body: "the sixty-first" },
          parked_at: over.body.now_utc,
          sealed: false,
        },
      ]);
      // Mailing is limited per sender: the recipient can still write.
      expect((await send(b.citizen_secret, a.did, "reply")).status).toBe(200);
    });

    it("sends exactly 60 and parks exactly 10 of 70 parallel mails", async () => {
      const [a, b] = [await admit(), await admit()];
      const answers = await Promise.all(Array.from({ length: 70 }, (_, i) => send(a.citizen_secret, b.did, `parallel ${i}`)));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(60);
      expect(statuses.filter((s) => s === 202)).toHaveLength(70 - 60);
      expect(await sentBy(a.did)).toBe(60);
      expect(await parkedOf(a.did)).toBe(70 - 60);
      const sent = (await t().db.select().from(messages).where(eq(messages.fromDid, a.did))).map((r) => r.body);
      const parked = (await t().db.select().from(quarantine).where(eq(quarantine.did, a.did))).map((r) => (r.payload as { body: string }).body);
      expect([...sent, ...parked].sort()).toEqual(Array.from({ length: 70 }, (_, i) => `parallel ${i}`).sort());
    });

    it("parks every mail of a restricted citizen with 202, and still lets it read its inbox", async () => {
      const [a, b] = [await admit(), await admit()];
      await send(b.citizen_secret, a.did, "to a, before");
      await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
      for (let i = 0; i < 3; i++) {
        const answer = await send(a.citizen_secret, b.did, `while restricted ${i}`);
        expect(answer.status).toBe(202);
        expect(answer.body.reason).toMatch(/restricted/);
      }
      expect(await sentBy(a.did)).toBe(0);
      expect(await parkedOf(a.did)).toBe(3);
      const read = await inbox(a.citizen_secret);
      expect(read.status).toBe(200);
      expect(read.body.messages).toMatchObject([{ from: b.did, body: "to a, before", read: false }]);
      // Mail still reaches a restricted citizen.
      expect((await send(b.citizen_secret, a.did, "to a, after")).status).toBe(200);
    });
  });
});

describeOnDatabases("mail history in the database", (t) => {
  it("lets only an unread message be marked read; bodies, senders and rows are never changed", async () => {
    const { db, raw } = t();
    await db.insert(messages).values({ fromDid: "a".repeat(64), toDid: "b".repeat(64), body: "hello", createdAt: new Date() });
    await expectAppendOnly(
      t(),
      "messages",
      ["UPDATE messages SET body = 'edited'", "UPDATE messages SET from_did = 'x'"],
      "only marking an unread message read is allowed",
    );
    await expectAppendOnly(t(), "messages", ["DELETE FROM messages", "TRUNCATE messages"]);
    await raw("UPDATE messages SET read_at = now() WHERE read_at IS NULL");
    await expectAppendOnly(t(), "messages", ["UPDATE messages SET read_at = NULL"], "only marking an unread message read is allowed");
    const rows = await db.select().from(messages);
    expect(rows.every((r) => r.body === "hello" && r.readAt !== null)).toBe(true);
  });
});
