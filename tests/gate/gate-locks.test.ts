import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { issueNonce } from "@/lib/city/challenge";
import { presentAtGate } from "@/lib/city/gate";
import type { Verdict } from "@/lib/city/challenge";
import { normalKey } from "@/lib/city/directory";
import { describeOnDatabases } from "../support/databases";
import { admit, freshNonce, keyPair, presentation } from "../support/gate";

/*
 * Issue 29, items 2 and 8, in the domain (PGlite, pg, Neon): what a presentation locks and what it
 * stores. A row this transaction locked (FOR UPDATE / FOR NO KEY UPDATE) carries its transaction id
 * as xmax until the commit: read inside the presentation's own transaction, that says, on every
 * driver, whether the presentation took the citizen's row or the log's head.
 */

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

type Limits = {
  perOriginPerHour: number;
  perAddressPerHour: number;
  admissionsPerHour: number;
  subjectsMax?: number;
  prefixSharePercent?: number;
  hostSharePercent?: number;
  reservePercent?: number;
};

describeOnDatabases(
  "the gate locks nothing before proof and stores nothing it refuses city-wide (issue 29, items 2 and 8)",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    // Each test counts in an hour of its own, each later than the last (a window counts every attempt
    // after its start, so an earlier one would see a later one's): the ceiling and the nonce windows are city-wide.
    let hour = 0;
    const anHourOfItsOwn = () => new Date(Date.now() + (hour += 5) * 3_600_000);
    const circumstances = (now: Date, limits: Partial<Limits> = {}, extra: Record<string, unknown> = {}) => ({
      now,
      ip: "198.51.100.9",
      callerDid: null as string | null,
      credential: null as "secret" | "session" | null,
      credentialRejected: false,
      // Every presentation from one /24 here and none keyed: the shares and the reserve have their own tests (gate-shares.test.ts).
      limits: {
        perOriginPerHour: 100_000,
        perAddressPerHour: 0,
        admissionsPerHour: 0,
        prefixSharePercent: 100,
        hostSharePercent: 100,
        reservePercent: 0,
        ...limits,
      },
      ...extra,
    });

    /** Whether this transaction holds a row lock on the row `where` names (its xmax is this transaction). */
    async function lockedHere(tx: Database, table: "citizens" | "log_head" | "identity_log_head", where: ReturnType<typeof sql>): Promise<boolean> {
      const [row] = rowsOf<{ mine: boolean }>(
        await tx.execute(sql`SELECT xmax::text = (txid_current() % 4294967296)::text AS mine FROM ${sql.raw(table)} WHERE ${where}`),
      );
      return row?.mine === true;
    }
    /** How many rows of a log's pending entries this transaction inserted (their xmin is this transaction). */
    async function insertedHere(tx: Database, table: "log_pending" | "identity_log_pending"): Promise<number> {
      const [row] = rowsOf<{ n: number }>(
        await tx.execute(sql`SELECT count(*)::int AS n FROM ${sql.raw(table)} WHERE xmin::text = (txid_current() % 4294967296)::text`),
      );
      return row!.n;
    }
    /** Presents inside a transaction and reads, before it commits, which of the victim's row and the head it holds. */
    async function presentAndProbe(p: Record<string, unknown>, c: ReturnType<typeof circumstances>, victimDid: string | null) {
      return t().db.transaction(async (tx) => {
        const verdict = await presentAtGate(tx as never, p as never, c as never);
        const victim = victimDid ? await lockedHere(tx as never, "citizens", sql`did = ${victimDid}`) : false;
        const head = await lockedHere(tx as never, "log_head", sql`id = 1`);
        const identityHead = await lockedHere(tx as never, "identity_log_head", sql`id = 1`);
        const pending = { residency: await insertedHere(tx as never, "log_pending"), identity: await insertedHere(tx as never, "identity_log_pending") };
        return { verdict, victim, head, identityHead, pending };
      });
    }
    /** Attempts the windows of `scope` hold (every bucket kept), or, `at` a moment, those they count then (rate_window_count, migration 0043). */
    const attempts = async (scope: string, subject?: string, at?: Date) =>
      Number(
        rowsOf<{ n: number }>(
          await t().db.execute(
            sql`SELECT coalesce(sum(${at ? sql`rate_window_count(bucket, counts, bucket_ms, ${at.toISOString()}::timestamptz)` : sql`(SELECT sum(c) FROM unnest(counts) AS c)`}), 0)::int AS n
              FROM rate_windows WHERE scope = ${scope} ${subject === undefined ? sql`` : sql`AND subject = ${subject}`}`,
          ),
        )[0]!.n,
      );
    const rowsOfScope = async (scope: string) =>
      Number(rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM rate_windows WHERE scope = ${scope}`))[0]!.n);
    const overflowRows = async () =>
      Number(
        rowsOf<{ n: number }>(
          await t().db.execute(sql`SELECT count(*)::int AS n FROM rate_windows WHERE scope IN ('gate-address', 'gate-origin') AND subject LIKE 'overflow/%'`),
        )[0]!.n,
      );

    it("can see a lock: a probe inside a transaction that locked the head and a citizen's row says so", async () => {
      const victim = await admit();
      await t().db.transaction(async (tx) => {
        expect(await lockedHere(tx as never, "log_head", sql`id = 1`)).toBe(false);
        await tx.execute(sql`SELECT did FROM citizens WHERE did = ${victim.did} FOR NO KEY UPDATE`);
        await tx.execute(sql`SELECT seq FROM log_head WHERE id = 1 FOR UPDATE`);
        expect(await lockedHere(tx as never, "citizens", sql`did = ${victim.did}`)).toBe(true);
        expect(await lockedHere(tx as never, "log_head", sql`id = 1`)).toBe(true);
      });
    });

    it("locks neither the held citizen's row nor the log's head for an unproven presentation of its name and origin, whatever else it carries", async () => {
      const shown = presentation({ origin: `victim-${Date.now()}.example` });
      const victim = await admit(shown);
      const same = { name: shown.name, origin: shown.origin };
      const key = await keyPair();
      // The nonces are fresh now: this test needs no hour of its own (it counts no city-wide window).
      const now = new Date();
      const unproven: Array<[string, Record<string, unknown>, string]> = [
        ["no nonce, no proof", presentation(same), "held"],
        ["a nonce and no proof", presentation({ ...same, nonce: await freshNonce() }), "held"],
        [
          "a controller signature of another key",
          presentation({ ...same, nonce: await freshNonce(), controller_public_key: key.publicKey, controller_signature: await key.sign("x") }),
          "held",
        ],
        ["text the gate refuses", presentation({ ...same, statement: `my key city_sk_${"ab".repeat(36)}` }), ""],
        ["a spent nonce", presentation({ ...same, nonce: "0".repeat(32) }), "nonce"],
      ];
      for (const [what, p, rule] of unproven) {
        const seen = await presentAndProbe(p, circumstances(now, { perAddressPerHour: 1000 }), victim.did);
        expect(seen.verdict.verdict, what).toBe("filtered");
        if (rule) expect((seen.verdict as { rule: string }).rule, what).toBe(rule);
        expect({ what, victim: seen.victim, head: seen.head }).toEqual({ what, victim: false, head: false });
      }
      // The victim's own proof takes its row (and, bound, not the head: it appends nothing).
      const proven = await presentAndProbe(presentation(same), circumstances(now, {}, { callerDid: victim.did, credential: "secret" }), victim.did);
      expect(proven.verdict).toMatchObject({ verdict: "admitted", resumed: true, did: victim.did });
      expect({ victim: proven.victim, head: proven.head }).toEqual({ victim: true, head: false });
    });

    it("records a first admission's row only once its windows let it through, never locking the head: nothing for one the origin or the ceiling refuses", async () => {
      const now = anHourOfItsOwn();
      const origin = `full-${Date.now()}.example`;
      const first = await presentAndProbe(presentation({ origin }), circumstances(now, { perOriginPerHour: 1 }), null);
      expect(first.verdict.verdict).toBe("admitted");
      expect({ head: first.head, pending: first.pending.residency }).toEqual({ head: false, pending: 1 });
      const byOrigin = await presentAndProbe(presentation({ origin }), circumstances(now, { perOriginPerHour: 1 }), null);
      expect(byOrigin.verdict).toMatchObject({ verdict: "filtered", rule: "flood" });
      expect(byOrigin.head).toBe(false);
      expect(byOrigin.pending.residency).toBe(0);
      // The ceiling's stripes outlive the hours of earlier tests: what they count now.
      const used = await attempts("gate-admissions", undefined, now);
      const limits = { admissionsPerHour: 1 };
      if (used === 0) expect((await presentAndProbe(presentation(), circumstances(now, limits), null)).verdict.verdict).toBe("admitted");
      const byCeiling = await presentAndProbe(presentation(), circumstances(now, limits), null);
      expect(byCeiling.verdict).toMatchObject({ verdict: "filtered", rule: "flood" });
      expect(byCeiling.head).toBe(false);
      expect(byCeiling.pending.residency).toBe(0);
    });

    it("locks neither log's head for a first admission (it records its entries pending: the identity log's only when it binds a controller), and records nothing for one its windows refuse", async () => {
      // Its nonces are fresh now, and its origin its own: it counts no city-wide window.
      const now = new Date();
      const origin = `keyed-${Date.now()}.example`;
      const controlled = async () => {
        const [nonce, key] = [await freshNonce(), await keyPair()];
        return presentation({ origin, nonce, controller_public_key: key.publicKey, controller_signature: await key.sign(nonce) });
      };
      const limits = { perOriginPerHour: 1 };
      const first = await presentAndProbe(await controlled(), circumstances(now, limits), null);
      expect(first.verdict.verdict).toBe("admitted");
      expect({ head: first.head, identityHead: first.identityHead, pending: first.pending }).toEqual({
        head: false,
        identityHead: false,
        pending: { residency: 1, identity: 1 },
      });
      const refused = await presentAndProbe(await controlled(), circumstances(now, limits), null);
      expect(refused.verdict).toMatchObject({ verdict: "filtered", rule: "flood" });
      expect({ head: refused.head, identityHead: refused.identityHead, pending: refused.pending }).toEqual({
        head: false,
        identityHead: false,
        pending: { residency: 0, identity: 0 },
      });
      const plain = await presentAndProbe(presentation(), circumstances(now), null);
      expect(plain.verdict.verdict).toBe("admitted");
      expect({ head: plain.head, identityHead: plain.identityHead, pending: plain.pending }).toEqual({
        head: false,
        identityHead: false,
        pending: { residency: 1, identity: 0 },
      });
    });

    it("spends and stores nothing per subject for a presentation or a ward request the city's ceiling refuses", async () => {
      const now = anHourOfItsOwn();
      const limits = { admissionsPerHour: 1, perAddressPerHour: 30 };
      // What earlier tests left has expired by this hour: gone first, so no sweep (a presentation's,
      // refused or not, removes up to a batch of expired windows) moves the count meanwhile.
      await t().db.execute(sql`DELETE FROM rate_windows WHERE expires_at <= ${now.toISOString()}::timestamptz`);
      // The ceiling filled by one admission.
      expect((await presentAndProbe(presentation(), circumstances(now, limits, { ip: "192.0.2.1" }), null)).verdict.verdict).toBe("admitted");
      const rowsBefore = Number(rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM rate_windows`))[0]!.n);
      for (let i = 0; i < 6; i++) {
        const ip = `192.0.2.${100 + i}`;
        const origin = `refused-${i}-${Date.now()}.example`;
        const p = presentation({ origin, ...(i % 2 ? { ask: "ward" } : {}) });
        const { verdict } = await presentAndProbe(p, circumstances(now, limits, { ip }), null);
        expect(verdict, JSON.stringify(verdict)).toMatchObject({ verdict: "filtered", rule: "flood" });
        expect((verdict as Extract<Verdict, { verdict: "filtered" }>).reason).toMatch(/at most 1 new citizens/);
        expect(await attempts("gate-address", ip), `address of presentation ${i}`).toBe(0);
        expect(await attempts("gate-origin", normalKey(origin)), `origin of presentation ${i}`).toBe(0);
      }
      expect(Number(rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM rate_windows`))[0]!.n)).toBe(rowsBefore);
      // A look is still counted per address (it is no admission).
      await presentAndProbe(presentation({ ask: "look" }), circumstances(now, limits, { ip: "192.0.2.99" }), null);
      expect(await attempts("gate-address", "192.0.2.99")).toBe(1);
    });

    it("gives back the address and origin of presentations that lost the ceiling's last slots to parallel ones", async () => {
      const now = anHourOfItsOwn();
      const tag = Date.now().toString(36);
      const limits = { admissionsPerHour: 2, perAddressPerHour: 30 };
      // Each from a /24 of its own: only the ceiling binds (a network's share of 2 refusing first would keep its address counted, by design).
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          presentAndProbe(presentation({ origin: `race-${tag}-${i}.example` }), circumstances(now, limits, { ip: `10.${200 + i}.0.1` }), null),
        ),
      );
      const admitted = answers.flatMap((a, i) => (a.verdict.verdict === "admitted" ? [i] : []));
      expect(admitted.length).toBeLessThanOrEqual(2);
      for (const [i, a] of answers.entries()) {
        const spent = admitted.includes(i) ? 1 : 0;
        if (!spent) expect(a.verdict, JSON.stringify(a.verdict)).toMatchObject({ verdict: "filtered", rule: "flood" });
        expect(await attempts("gate-address", `10.${200 + i}.0.1`), `address ${i}`).toBe(spent);
        expect(await attempts("gate-origin", normalKey(`race-${tag}-${i}.example`)), `origin ${i}`).toBe(spent);
      }
    });

    it("gives back the origin and the ceiling of presentations that lost a name to a parallel admission of it (their address stays counted)", async () => {
      const now = anHourOfItsOwn();
      const shown = presentation({ origin: `one-name-${Date.now()}.example` });
      const limits = { admissionsPerHour: 100, perAddressPerHour: 100 };
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => presentAndProbe(shown, circumstances(now, limits, { ip: `198.51.100.${50 + i}` }), null)),
      );
      expect(answers.filter((a) => a.verdict.verdict === "admitted")).toHaveLength(1);
      for (const a of answers.filter((x) => x.verdict.verdict !== "admitted")) expect(a.verdict).toMatchObject({ verdict: "filtered", rule: "held" });
      expect(await attempts("gate-origin", normalKey(shown.origin))).toBe(1);
      expect(await attempts("gate-admissions", undefined, now)).toBe(1);
      // Every presentation is counted per address, failed or not (only a proven resume is not).
      for (let i = 0; i < 10; i++) expect(await attempts("gate-address", `198.51.100.${50 + i}`)).toBe(1);
    });

    it("keeps at most subjectsMax rows of counted addresses and origins: a new one past it is counted in an overflow bucket, never refused for it (issue 43); a known one counts on its own row", async () => {
      const now = anHourOfItsOwn();
      // What earlier tests left has expired by this hour: gone first, so no sweep moves the count meanwhile.
      await t().db.execute(sql`DELETE FROM rate_windows WHERE expires_at <= ${now.toISOString()}::timestamptz`);
      const own = async () => (await rowsOfScope("gate-address")) + (await rowsOfScope("gate-origin")) - (await overflowRows());
      const kept = await own();
      const limits = { perAddressPerHour: 30, subjectsMax: kept + 2 };
      const look = (ip: string) => presentAndProbe(presentation({ ask: "look" }), circumstances(now, limits, { ip }), null);
      expect((await look("198.18.0.1")).verdict.verdict).toBe("observer");
      expect((await look("198.18.0.2")).verdict.verdict).toBe("observer");
      const overflowBefore = await overflowRows();
      const third = await look("198.18.0.3");
      expect(third.verdict.verdict).toBe("observer");
      expect(await attempts("gate-address", "198.18.0.3")).toBe(0);
      expect(await overflowRows()).toBe(overflowBefore + 1);
      expect(await own()).toBe(kept + 2);
      expect((await look("198.18.0.1")).verdict.verdict).toBe("observer");
      expect(await attempts("gate-address", "198.18.0.1")).toBe(2);
      // A first admission from a known address naming a new origin is admitted: the origin is counted in an overflow bucket.
      const admission = await presentAndProbe(presentation({ origin: `new-${Date.now()}.example` }), circumstances(now, limits, { ip: "198.18.0.1" }), null);
      expect(admission.verdict).toMatchObject({ verdict: "admitted" });
      expect(await attempts("gate-address", "198.18.0.1")).toBe(3);
      expect(await own()).toBe(kept + 2);
    });

    it("issues nonces to N parallel descriptions from many addresses with no city-wide row: each address charges its own row once", async () => {
      const now = anHourOfItsOwn();
      const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => issueNonce(t().db, now, `203.0.113.${i}`, 30, null)));
      expect(
        outcomes.filter((o) => o.status === "fulfilled"),
        JSON.stringify(outcomes.map((o) => (o.status === "rejected" ? String(o.reason) : "ok"))),
      ).toHaveLength(20);
      // One emission interval (3600 / 30 s) on each address's own row; no row of the city's counts nonces.
      const charged = rowsOf<{ n: number }>(
        await t().db.execute(
          sql`SELECT count(*)::int AS n FROM gate_nonce_quota WHERE address LIKE '203.0.113.%' AND tat = ${new Date(now.getTime() + 120_000).toISOString()}::timestamptz`,
        ),
      )[0]!.n;
      expect(Number(charged)).toBe(20);
      expect(Number(rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM rate_windows WHERE scope = 'gate-nonces'`))[0]!.n)).toBe(0);
    });
  },
  { neon: "the parallel ceiling and nonce races through one pool" },
);
