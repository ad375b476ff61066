import { and, count, eq, gt, inArray, like } from "drizzle-orm";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { gateNonces, rateWindows, wardNotes } from "@/db/schema";
import { consumeNonce, issueNonce } from "@/lib/city/challenge";
import { RATE_SWEEP_BATCH } from "@/lib/city/bounds/rate";
import { takeSlot } from "@/lib/city/bounds";
import { readAndFile } from "@/lib/city/ward";
import { WARD_UNSIGNED_SCOPE } from "@/lib/city/ward/ward";
import { describeGate, presentGate } from "@/lib/doors/declarations/gate/gate";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "2";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

describeOnDatabases("stores an attacker can grow are swept or bounded", (t) => {
  beforeAll(() => useDatabase(t().db));

  describe("rate_windows", () => {
    it("sweeps expired windows of every subject, a bounded batch per counted attempt, and never an unexpired row", async () => {
      const scope = `sweep-${crypto.randomUUID()}`;
      const t0 = new Date(Date.UTC(2031, 0, 1));
      // 100 attacker-chosen origins, each counted once and never again, and one day-long window.
      for (let i = 0; i < 100; i++) await takeSlot(t().db, { scope, subject: `origin-${i}.example`, limit: 20, windowSeconds: 3600 }, t0);
      await takeSlot(t().db, { scope, subject: "appeal", limit: 3, windowSeconds: 86_400 }, t0);
      const left = async () =>
        (
          await t()
            .db.select({ n: count() })
            .from(rateWindows)
            .where(and(eq(rateWindows.scope, scope), like(rateWindows.subject, "origin-%")))
        )[0]!.n;
      expect(await left()).toBe(100);

      // Once the takes' bucket (5 minutes: the hour in twelve) is an hour old.
      const later = new Date(t0.getTime() + 3900_000);
      // Only this scenario's rows are expired at `later` (other tests run shuffled, at moments of their own).
      await t().raw(`DELETE FROM rate_windows WHERE scope <> '${scope}' AND expires_at <= '${later.toISOString()}'`);
      await takeSlot(t().db, { scope: `${scope}-other`, subject: "someone-else", limit: 20, windowSeconds: 3600 }, later);
      expect(await left()).toBe(100 - RATE_SWEEP_BATCH);
      for (let i = 0; i < 3; i++) await takeSlot(t().db, { scope: `${scope}-other`, subject: `else-${i}`, limit: 20, windowSeconds: 3600 }, later);
      expect(await left()).toBe(0);
      // The day-long window is not over: its attempt still counts.
      const day = await t()
        .db.select({ n: count() })
        .from(rateWindows)
        .where(and(eq(rateWindows.scope, scope), eq(rateWindows.subject, "appeal")));
      expect(day[0]!.n).toBe(1);
    });
  });

  describe("gate nonces", () => {
    it("are stored by no poll: twenty polls add no row, and each poll's nonce spends once (a later poll's does not void an earlier's)", async () => {
      const me = await admit();
      const before = (await t().db.select({ n: count() }).from(gateNonces))[0]!.n;
      const nonces: string[] = [];
      for (let i = 0; i < 20; i++) {
        const poll = await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } });
        expect(poll.status).toBe(200);
        expect(poll.body).toMatchObject({ nonceTtlSeconds: 600, nonceSource: "gate_nonces" });
        expect(poll.body.nonce).toMatch(/^[0-9a-f]{32}$/);
        nonces.push(poll.body.nonce);
      }
      expect(new Set(nonces).size).toBe(20);
      expect((await t().db.select({ n: count() }).from(gateNonces))[0]!.n).toBe(before);
      for (const nonce of [nonces[0]!, nonces[19]!]) {
        expect(await consumeNonce(t().db, nonce, new Date())).toBe(true);
        expect(await consumeNonce(t().db, nonce, new Date())).toBe(false);
      }
      expect((await t().db.select({ n: count() }).from(gateNonces))[0]!.n).toBe(before + 2);
    }, 120_000);

    it("are swept once spent and expired, a bounded batch per spend, never one still fresh", async () => {
      const t0 = new Date();
      // Expired an hour ago: no row another test spent (kept 605 s from its issue, now) is as old.
      const expired = Array.from({ length: 40 }, (_, i) => ({ nonce: `sweep-${i}-${crypto.randomUUID()}`, expiresAt: new Date(t0.getTime() - 3600_000 - i) }));
      await t().db.insert(gateNonces).values(expired);
      const left = async () =>
        (
          await t()
            .db.select({ n: count() })
            .from(gateNonces)
            .where(
              inArray(
                gateNonces.nonce,
                expired.map((e) => e.nonce),
              ),
            )
        )[0]!.n;
      const spend = async () => expect(await consumeNonce(t().db, (await issueNonce(t().db, t0, null, 0)).nonce, t0)).toBe(true);
      await spend();
      expect(await left()).toBe(40 - 32);
      await spend();
      expect(await left()).toBe(0);
      // The nonces just spent are kept: still fresh at t0, so a replay must still find them.
      expect((await t().db.select({ n: count() }).from(gateNonces).where(gt(gateNonces.expiresAt, t0)))[0]!.n).toBeGreaterThanOrEqual(2);
    });
  });

  describe("an unknown client address is never a shared bucket", () => {
    it("lets every caller without a known address take nonces and look, past the per-address bound", async () => {
      for (let i = 0; i < 8; i++) expect((await callDoor(describeGate)).status).toBe(200);
      for (let i = 0; i < 8; i++) {
        const look = await callDoor(presentGate, { body: presentation({ kind: "human", ask: "look", origin: `look-${i}.example` }) });
        expect(look.body.verdict).toBe("observer");
      }
      // A newcomer after all those looks is admitted.
      await admit({ origin: "newcomer.example" });
      // A known address keeps its own bound.
      const ip = `203.0.113.${Math.floor(Math.random() * 250)}`;
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await callDoor(describeGate, { ip })).status);
      expect(statuses).toEqual([200, 200, 429]);
    });
  });

  describe("unsigned ward filings", () => {
    // Each test counts the one city-wide window from empty (tests run shuffled, at moments of their own).
    beforeEach(async () => void (await t().raw(`DELETE FROM rate_windows WHERE scope = '${WARD_UNSIGNED_SCOPE}'`)));
    // An unsigned note: distress is not counted in the ceiling (its reserve: store-shares.test.ts), checked below.
    const file = (ip: string | null, unsignedPerHour: number, now: Date, perAddressPerHour = 10, kind: "note" | "distress" = "note") =>
      readAndFile(t().db, {
        state: "I keep retrying the same call",
        ...(kind === "distress" ? { kind } : { note: "a note" }),
        did: null,
        restricted: false,
        ip,
        perAddressPerHour,
        unsignedPerHour,
        now,
      });

    it("have a city-wide ceiling per hour whatever the addresses, and 0 turns it off", async () => {
      const now = new Date(Date.UTC(2032, 0, 1, Math.floor(Math.random() * 1000)));
      const since = (
        await t()
          .db.select({ n: count() })
          .from(wardNotes)
          .where(gt(wardNotes.filedAt, new Date(now.getTime() - 1)))
      )[0]!.n;
      const filings = [];
      for (let i = 0; i < 7; i++) filings.push((await file(`198.18.${i}.1`, 4, now)).filing);
      expect(
        filings.map((f) => ("why" in f ? f.why : "filed")),
        JSON.stringify(filings),
      ).toEqual(["filed", "filed", "filed", "filed", "city-ceiling", "city-ceiling", "city-ceiling"]);
      // The filings' bucket (an hour's first five minutes) leaves the window 3900 s on.
      expect(filings.slice(4)).toEqual(Array(3).fill({ filed: false, why: "city-ceiling", retryAfterSeconds: 3900 }));
      expect(
        (
          await t()
            .db.select({ n: count() })
            .from(wardNotes)
            .where(gt(wardNotes.filedAt, new Date(now.getTime() - 1)))
        )[0]!.n,
      ).toBe(since + 4);
      // Distress from a new network is filed while the ceiling is full: a flood of notes never shuts it out.
      expect((await file("198.18.98.1", 4, now, 10, "distress")).filing).toMatchObject({ filed: true });
      expect((await file("198.18.99.1", 0, now)).filing).toMatchObject({ filed: true });
    });

    it("from unknown addresses are not one shared bucket: the per-address bound stands aside, the ceiling holds", async () => {
      const now = new Date(Date.UTC(2033, 0, 1, Math.floor(Math.random() * 1000)));
      const filings = [];
      for (let i = 0; i < 5; i++) filings.push((await file(null, 3, now, 1)).filing);
      expect(filings.map((f) => ("why" in f ? f.why : "filed"))).toEqual(["filed", "filed", "filed", "city-ceiling", "city-ceiling"]);
    });
  });
});
