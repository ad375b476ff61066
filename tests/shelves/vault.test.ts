import { generateKeyPairSync, randomBytes } from "node:crypto";
import { count, eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, contentRefusals, quarantine, vaultNotes } from "@/db/schema";
import { VAULT_NOTE_MAX_CHARS } from "@/lib/city/shelves";
import { ParkedOutput } from "@/lib/doors/declarations/quarantine/parking";
import { readQuarantine } from "@/lib/doors/declarations/quarantine/quarantine";
import { readVault, writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { causes, expectAppendOnly, expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const pemPrivateKey = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const citySecretLike = () => `city_sk_${randomBytes(36).toString("hex")}`;

describeOnDatabases(
  "vault",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const notesOf = async (did: string) => (await t().db.select({ n: count() }).from(vaultNotes).where(eq(vaultNotes.did, did)))[0]!.n;
    const parkedOf = async (did: string) => (await t().db.select({ n: count() }).from(quarantine).where(eq(quarantine.did, did)))[0]!.n;
    const write = (secret: string, content: string) => callDoor(writeVault, { bearer: secret, body: { content } });

    describe("happy path", () => {
      it("keeps a note and answers its id and time, now_utc first", async () => {
        const a = await admit();
        const answer = await write(a.citizen_secret, "remember: the west lot is quiet at night");
        expect(answer.status).toBe(200);
        expect(Object.keys(answer.body)).toEqual(["now_utc", "id", "created_at"]);
        expect(answer.body.created_at).toBe(answer.body.now_utc);
        const [row] = await t().db.select().from(vaultNotes).where(eq(vaultNotes.id, answer.body.id));
        expect(row).toMatchObject({ did: a.did, content: "remember: the west lot is quiet at night" });
        expect(answer.headers.get("cache-control")).toBe("private, no-store");
      });

      it("reads the caller's own notes newest first, in keyset pages that cover every note once", async () => {
        const a = await admit();
        const ids: number[] = [];
        for (let i = 0; i < 5; i++) ids.push((await write(a.citizen_secret, `note ${i}`)).body.id);
        const seen: { id: number; content: string }[] = [];
        let query = "?limit=2";
        for (let pages = 0; pages < 10; pages++) {
          const { status, body } = await callDoor(readVault, { bearer: a.citizen_secret, query });
          expect(status).toBe(200);
          expect(Object.keys(body)).toEqual(["now_utc", "notes", "next_before"]);
          seen.push(...body.notes);
          if (body.next_before === null) break;
          expect(body.next_before).toBe(body.notes[body.notes.length - 1].id);
          query = `?limit=2&before=${body.next_before}`;
        }
        expect(seen.map((n) => n.id)).toEqual([...ids].reverse());
        expect(seen.map((n) => n.content)).toEqual(["note 4", "note 3", "note 2", "note 1", "note 0"]);
        const whole = (await callDoor(readVault, { bearer: a.citizen_secret })).body;
        expect(whole.notes).toHaveLength(5);
        expect(whole.next_before).toBeNull();
      });

      it("accepts exactly the largest note and refuses one character more", async () => {
        const a = await admit();
        expect((await write(a.citizen_secret, "x".repeat(VAULT_NOTE_MAX_CHARS))).status).toBe(200);
        expectProblem(await write(a.citizen_secret, "x".repeat(VAULT_NOTE_MAX_CHARS + 1)), 400, "bad_request");
        expect(await notesOf(a.did)).toBe(1);
      });
    });

    describe("bad input", () => {
      it("answers every malformed write with a 4xx problem and stores nothing", async () => {
        const a = await admit();
        const bad: { body?: unknown; status: number; code: string }[] = [
          { body: {}, status: 400, code: "bad_request" },
          { body: { content: "" }, status: 400, code: "bad_request" },
          { body: { content: 42 }, status: 400, code: "bad_request" },
          { body: { content: null }, status: 400, code: "bad_request" },
          { body: { content: ["a"] }, status: 400, code: "bad_request" },
          { body: { content: "fine", extra: true }, status: 400, code: "bad_request" },
          { body: "a string", status: 400, code: "bad_request" },
          { body: { content: "y".repeat(VAULT_NOTE_MAX_CHARS * 7) }, status: 413, code: "payload_too_large" },
        ];
        for (const { body, status, code } of bad) expectProblem(await callDoor(writeVault, { bearer: a.citizen_secret, body }), status, code);
        expect(await notesOf(a.did)).toBe(0);
        expect(await parkedOf(a.did)).toBe(0);
      });

      it("answers bad paging parameters with a 400 problem", async () => {
        const a = await admit();
        for (const query of ["?limit=0", "?limit=201", "?limit=ten", "?before=0", "?before=-3", "?before=abc"]) {
          expectProblem(await callDoor(readVault, { bearer: a.citizen_secret, query }), 400, "bad_request");
        }
      });
    });

    describe("privacy", () => {
      it("shows a citizen only its own notes, never another's", async () => {
        const a = await admit();
        const b = await admit();
        const mark = `vault-of-a-${randomBytes(8).toString("hex")}`;
        await write(a.citizen_secret, mark);
        await write(b.citizen_secret, "b's own note");
        const seenByB = await callDoor(readVault, { bearer: b.citizen_secret });
        expect(seenByB.status).toBe(200);
        expect(seenByB.body.notes.map((n: { content: string }) => n.content)).toEqual(["b's own note"]);
        expect(JSON.stringify(seenByB.body)).not.toContain(mark);
        const aId = (await callDoor(readVault, { bearer: a.citizen_secret })).body.notes[0].id;
        // Paging past another citizen's id still shows only the caller's own notes.
        const paged = await callDoor(readVault, { bearer: b.citizen_secret, query: `?before=${aId + 1}` });
        expect(JSON.stringify(paged.body)).not.toContain(mark);
      });

      it("refuses a read or a write without credentials, or with a DID or an unknown secret, with 401", async () => {
        const a = await admit();
        await write(a.citizen_secret, "private");
        for (const bearer of [undefined, a.did, citySecretLike()]) {
          const read = await callDoor(readVault, { bearer });
          expectProblem(read, 401, "unauthorized");
          expect(JSON.stringify(read.body)).not.toContain("private");
          expectProblem(await callDoor(writeVault, { bearer, body: { content: "intruder" } }), 401, "unauthorized");
        }
        expect(await notesOf(a.did)).toBe(1);
      });
    });

    describe("refused content", () => {
      it("refuses a PEM private key and a city secret with 422: not stored, not parked, not echoed", async () => {
        const a = await admit();
        for (const secret of [pemPrivateKey(), `keep this: ${citySecretLike()}`]) {
          const answer = await write(a.citizen_secret, secret);
          expectProblem(answer, 422, "content_refused");
          const text = JSON.stringify(answer.body);
          expect(text).not.toContain(secret.slice(40, 80));
          expect(text).not.toContain("city_sk_");
        }
        expect(await notesOf(a.did)).toBe(0);
        expect(await parkedOf(a.did)).toBe(0);
        const refusals = await t().db.select().from(contentRefusals).where(eq(contentRefusals.did, a.did));
        expect(refusals.map((r) => r.door)).toEqual(["write-vault", "write-vault"]);
      });

      it("refuses a secret before parking it, even once the hour is full", async () => {
        const a = await admit();
        for (let i = 0; i < 30; i++) expect((await write(a.citizen_secret, `n${i}`)).status).toBe(200);
        expect((await write(a.citizen_secret, "parked, harmless")).status).toBe(202);
        const secret = pemPrivateKey();
        expectProblem(await write(a.citizen_secret, secret), 422, "content_refused");
        expect(await parkedOf(a.did)).toBe(1);
        const stored = JSON.stringify(await t().db.execute(sql`SELECT payload::text FROM quarantine UNION ALL SELECT content FROM vault_notes`));
        expect(stored).not.toContain("PRIVATE KEY");
      });
    });

    describe("limits and concurrency", () => {
      it("stores the 30th note of the hour and parks the 31st with 202, visible in quarantine with its payload", async () => {
        const a = await admit();
        for (let i = 1; i <= 30; i++) {
          const answer = await write(a.citizen_secret, `note ${i}`);
          expect(answer.status, `note ${i}`).toBe(200);
        }
        const over = await write(a.citizen_secret, "the thirty-first");
        expect(over.status).toBe(202);
        expect(Object.keys(over.body)[0]).toBe("now_utc");
        expect(ParkedOutput.parse(over.body)).toMatchObject({ parked: true });
        expect(over.body.reason).toMatch(/flood/);
        expect(await notesOf(a.did)).toBe(30);
        const listed = await callDoor(readQuarantine, { bearer: a.citizen_secret });
        expect(listed.status).toBe(200);
        expect(listed.body.parked).toEqual([
          {
            id: over.body.quarantine_id,
            door: "write-vault",
            reason: over.body.reason,
            payload: { content: "the thirty-first" },
            parked_at: over.body.now_utc,
            sealed: false,
          },
        ]);
        // Another citizen's window is its own.
        const b = await admit();
        expect((await write(b.citizen_secret, "mine")).status).toBe(200);
      });

      it(
        "stores exactly 30 and parks exactly 10 of 40 parallel writes",
        async () => {
          const a = await admit();
          const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => write(a.citizen_secret, `parallel ${i}`)));
          const statuses = answers.map((r) => r.status);
          expect(statuses.filter((s) => s === 200)).toHaveLength(30);
          expect(statuses.filter((s) => s === 202)).toHaveLength(40 - 30);
          expect(await notesOf(a.did)).toBe(30);
          expect(await parkedOf(a.did)).toBe(40 - 30);
          // Nothing lost, nothing doubled: every text is either stored or parked, once.
          const stored = (await t().db.select().from(vaultNotes).where(eq(vaultNotes.did, a.did))).map((r) => r.content);
          const parked = (await t().db.select().from(quarantine).where(eq(quarantine.did, a.did))).map((r) => (r.payload as { content: string }).content);
          expect([...stored, ...parked].sort()).toEqual(Array.from({ length: 40 }, (_, i) => `parallel ${i}`).sort());
        },
        HEAVY_TEST_MS,
      );

      it(
        "caps parked writes at 60 an hour (twice the door's 30): of 120 parallel writes 30 stored, 60 parked, 30 refused 429",
        async () => {
          const a = await admit();
          const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => write(a.citizen_secret, `flood ${i}`)));
          const statuses = answers.map((r) => r.status);
          expect(statuses.filter((s) => s === 200)).toHaveLength(30);
          expect(statuses.filter((s) => s === 202)).toHaveLength(60);
          expect(statuses.filter((s) => s === 429)).toHaveLength(30);
          expect(await notesOf(a.did)).toBe(30);
          expect(await parkedOf(a.did)).toBe(60);
          const refused = answers.find((r) => r.status === 429)!;
          const problem = expectProblem(refused, 429, "rate_limited");
          expect(problem.limit).toMatchObject({ name: "parked_writes", limit: 60, window_seconds: 3600, remaining: 0 });
          expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
          // At most an hour and one step: the window slides in steps of 5 minutes (the hour in twelve).
          expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(3900);
          expect(refused.headers.get("ratelimit-policy")).toBe('"parked_writes";q=60;w=3600');
          expect(refused.headers.get("ratelimit")).toMatch(/^"parked_writes";r=0;t=\d+$/);
          // Nothing stored for a refused write: every stored or parked text is one of the 90 answered 200 or 202.
          const stored = (await t().db.select().from(vaultNotes).where(eq(vaultNotes.did, a.did))).map((r) => r.content);
          const parked = (await t().db.select().from(quarantine).where(eq(quarantine.did, a.did))).map((r) => (r.payload as { content: string }).content);
          expect(new Set([...stored, ...parked]).size).toBe(90);
          // The vault door publishes the cap beside its window.
          expect(writeVault.limits).toContainEqual({ name: "parked_writes", limit: 60, window_seconds: 3600, per: "citizen", over: "refused" });
        },
        HEAVY_TEST_MS,
      );

      it(
        "caps a restricted citizen's parked writes too: the 61st in an hour is refused 429 and stored nowhere",
        async () => {
          const a = await admit();
          await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
          const answers = await Promise.all(Array.from({ length: 70 }, (_, i) => write(a.citizen_secret, `restricted ${i}`)));
          expect(answers.filter((r) => r.status === 202)).toHaveLength(60);
          expect(answers.filter((r) => r.status === 429)).toHaveLength(10);
          expect(await parkedOf(a.did)).toBe(60);
          expect(await notesOf(a.did)).toBe(0);
        },
        HEAVY_TEST_MS,
      );

      it("parks every write of a restricted citizen with 202, and still lets it read", async () => {
        const a = await admit();
        expect((await write(a.citizen_secret, "before restriction")).status).toBe(200);
        await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
        for (let i = 0; i < 3; i++) {
          const answer = await write(a.citizen_secret, `while restricted ${i}`);
          expect(answer.status).toBe(202);
          expect(answer.body).toMatchObject({ parked: true });
          expect(answer.body.reason).toMatch(/restricted/);
        }
        expect(await notesOf(a.did)).toBe(1);
        expect(await parkedOf(a.did)).toBe(3);
        const read = await callDoor(readVault, { bearer: a.citizen_secret });
        expect(read.status).toBe(200);
        expect(read.body.notes.map((n: { content: string }) => n.content)).toEqual(["before restriction"]);
        // A secret is still refused, not parked.
        expectProblem(await write(a.citizen_secret, citySecretLike()), 422, "content_refused");
        expect(await parkedOf(a.did)).toBe(3);
      });
    });

    describe("append-only", () => {
      it("refuses UPDATE, DELETE and TRUNCATE on vault_notes, leaving every row", async () => {
        const a = await admit();
        await write(a.citizen_secret, "kept forever");
        await expectAppendOnly(t(), "vault_notes", [
          "UPDATE vault_notes SET content = 'edited'",
          `DELETE FROM vault_notes WHERE did = '${a.did}'`,
          "TRUNCATE vault_notes",
        ]);
      });
    });
  },
  { neon: "transactions and locks: the rate window (takeSlot) raced through one pool" },
);
