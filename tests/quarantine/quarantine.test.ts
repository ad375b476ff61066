import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, quarantine } from "@/db/schema";
import { readInboxDoor, sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { readQuarantine } from "@/lib/doors/declarations/quarantine/quarantine";
import { readVault, writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { causes, expectAppendOnly, expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

type ParkedRow = { id: number; door: string; reason: string; payload: Record<string, unknown>; parked_at: string; sealed: boolean };

describeOnDatabases("quarantine", (t) => {
  beforeAll(() => useDatabase(t().db));
  const restrict = (did: string) => t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, did));
  const read = (bearer?: string, query?: string) => callDoor(readQuarantine, { bearer, query });

  /** A restricted citizen whose vault and mail writes are all parked. */
  async function restrictedCitizen() {
    const c = await admit();
    await restrict(c.did);
    return c;
  }

  describe("happy path", () => {
    it("answers an empty list for a citizen with nothing parked", async () => {
      const a = await admit();
      const { status, body, headers } = await read(a.citizen_secret);
      expect(status).toBe(200);
      expect(Object.keys(body)).toEqual(["now_utc", "parked", "next_before", "note"]);
      expect(body).toMatchObject({ parked: [], next_before: null });
      expect(body.note).toMatch(/never sealed/);
      expect(headers.get("cache-control")).toBe("private, no-store");
    });

    it("lists the caller's parked vault notes and mail newest first, with door, reason and payload, never sealed", async () => {
      const [a, b] = [await restrictedCitizen(), await admit()];
      const note = await callDoor(writeVault, { bearer: a.citizen_secret, body: { content: "a parked note" } });
      const mail = await callDoor(sendMessageDoor, { bearer: a.citizen_secret, body: { to: b.did, body: "a parked mail" } });
      expect([note.status, mail.status]).toEqual([202, 202]);
      const { body } = await read(a.citizen_secret);
      expect(body.parked).toEqual([
        {
          id: mail.body.quarantine_id,
          door: "send-message",
          reason: mail.body.reason,
          payload: { to: b.did, body: "a parked mail" },
          parked_at: mail.body.now_utc,
          sealed: false,
        },
        {
          id: note.body.quarantine_id,
          door: "write-vault",
          reason: note.body.reason,
          payload: { content: "a parked note" },
          parked_at: note.body.now_utc,
          sealed: false,
        },
      ]);
      // Parked is not stored: not on the shelf, not in the recipient's inbox.
      expect((await callDoor(readVault, { bearer: a.citizen_secret })).body.notes).toEqual([]);
      expect((await callDoor(readInboxDoor, { bearer: b.citizen_secret })).body.messages).toEqual([]);
    });

    it("pages with before and limit, covering every parked write exactly once", async () => {
      const a = await restrictedCitizen();
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push((await callDoor(writeVault, { bearer: a.citizen_secret, body: { content: `p${i}` } })).body.quarantine_id);
      const seen: ParkedRow[] = [];
      let query = "?limit=2";
      for (let pages = 0; pages < 10; pages++) {
        const { status, body } = await read(a.citizen_secret, query);
        expect(status).toBe(200);
        expect(body.parked.length).toBeLessThanOrEqual(2);
        seen.push(...body.parked);
        if (body.next_before === null) break;
        expect(body.next_before).toBe(body.parked[body.parked.length - 1].id);
        query = `?limit=2&before=${body.next_before}`;
      }
      expect(seen.map((r) => r.id)).toEqual([...ids].reverse());
      expect(seen.map((r) => r.payload.content)).toEqual(["p4", "p3", "p2", "p1", "p0"]);
    });
  });

  describe("bad input", () => {
    it("answers bad paging parameters with a 400 problem", async () => {
      const a = await admit();
      for (const query of ["?limit=0", "?limit=201", "?limit=x", "?before=0", "?before=-1", "?before=1.5", "?before=abc"]) {
        expectProblem(await read(a.citizen_secret, query), 400, "bad_request");
      }
    });
  });

  describe("privacy", () => {
    it("shows a citizen only its own parked writes; without valid credentials it answers 401", async () => {
      const [a, b] = [await restrictedCitizen(), await admit()];
      const mark = `parked-of-a-${randomBytes(8).toString("hex")}`;
      const parked = await callDoor(writeVault, { bearer: a.citizen_secret, body: { content: mark } });
      expect(parked.status).toBe(202);
      const seenByB = await read(b.citizen_secret, `?before=${parked.body.quarantine_id + 1}`);
      expect(seenByB.status).toBe(200);
      expect(seenByB.body.parked).toEqual([]);
      expect(JSON.stringify(seenByB.body)).not.toContain(mark);
      for (const bearer of [undefined, a.did, `city_sk_${randomBytes(36).toString("hex")}`]) {
        const answer = await read(bearer);
        expectProblem(answer, 401, "unauthorized");
        expect(JSON.stringify(answer.body)).not.toContain(mark);
      }
      expect((await read(a.citizen_secret)).body.parked.map((r: ParkedRow) => r.payload.content)).toEqual([mark]);
    });
  });

  describe("append-only", () => {
    it("refuses UPDATE, DELETE and TRUNCATE on quarantine, leaving every row", async () => {
      const a = await restrictedCitizen();
      expect((await callDoor(writeVault, { bearer: a.citizen_secret, body: { content: "kept forever" } })).status).toBe(202);
      expect(JSON.stringify(await t().db.select().from(quarantine))).toContain("kept forever");
      await expectAppendOnly(t(), "quarantine", [
        "UPDATE quarantine SET reason = 'released'",
        `UPDATE quarantine SET payload = '{}'::jsonb WHERE did = '${a.did}'`,
        `DELETE FROM quarantine WHERE did = '${a.did}'`,
        "TRUNCATE quarantine",
      ]);
    });
  });
});
