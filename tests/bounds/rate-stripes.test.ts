import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { cityWindow, RATE_STRIPES, takeSlot, type Window } from "@/lib/city/bounds";
import { stripeLimit } from "@/lib/city/bounds/rate-stripes";
import { describeOnDatabases } from "../support/databases";
import { HEAVY_TEST_MS } from "../support/limits";
import { countedAttempts } from "../support/rate";

/*
 * Issue 42, directions 2 and 3: a rate window counts per bucket in one row per subject, and a
 * city-wide window over stripes no caller shares while one is free. At the edge, with parallel
 * takers on PostgreSQL (two pools: two serverless instances), exactly the limit passes, a
 * city-wide window is never exceeded and never refuses while a stripe has room, and parallel
 * takers of a city-wide window hold distinct rows and wait for none (pg_locks: no lock not granted).
 */

const HOUR = 3600;
/** The first moment of an hour bucket (every take of a scenario at once: nothing ages meanwhile). */
const bucketStart = (hoursAhead: number) => new Date(Math.ceil(Date.now() / 300_000) * 300_000 + hoursAhead * HOUR * 1000);
const fresh = (what: string) => `${what}-${crypto.randomUUID()}`;

describeOnDatabases("rate windows at their edge, and city-wide windows over stripes (issue 42)", (t) => {
  beforeAll(() => useDatabase(t().db));

  /** Both instances on PostgreSQL (a pool each), or the one PGlite handle. */
  async function instances(): Promise<{ dbs: Database[]; close: () => Promise<void> }> {
    const other = await t().openAnotherInstance();
    return { dbs: other ? [t().db, other.db] : [t().db], close: async () => void (await other?.close()) };
  }
  /** `n` takes of `window` at `now`, in parallel over the instances: how many were allowed. */
  async function parallelTakes(n: number, window: (i: number) => Window, now: Date): Promise<number> {
    const { dbs, close } = await instances();
    try {
      const slots = await Promise.all(Array.from({ length: n }, (_, i) => takeSlot(dbs[i % dbs.length]!, window(i), now)));
      return slots.filter((s) => s.allowed).length;
    } finally {
      await close();
    }
  }
  /** Backends of this database waiting on a lock now (pg_stat_activity: other suites share the server). */
  const lockWaits = async () =>
    Number(
      rowsOf<{ n: number }>(
        await t().db.execute(sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`),
      )[0]!.n,
    );
  const stripeRows = async (scope: string) =>
    rowsOf<{ subject: string; n: number }>(
      await t().db.execute(sql`SELECT subject, (SELECT sum(c) FROM unnest(counts) AS c)::int AS n FROM rate_windows WHERE scope = ${scope} ORDER BY subject`),
    );

  it("lets exactly the limit through one subject's window under parallel takers, and counts it in the row", async () => {
    const window = { scope: fresh("edge"), subject: "203.0.113.7", limit: 7, windowSeconds: HOUR };
    const now = bucketStart(10);
    expect(await parallelTakes(24, () => window, now)).toBe(7);
    expect(await countedAttempts(t().db, { scope: window.scope })).toBe(7);
    // One row, whatever the attempts: constant work per take.
    expect(await stripeRows(window.scope)).toEqual([{ subject: "203.0.113.7", n: 7 }]);
    expect((await takeSlot(t().db, window, now)).retryAfterSeconds).toBe(HOUR + 300);
  });

  it(
    "never lets more than the limit through a city-wide window, and refuses none while a stripe has room",
    async () => {
      const window = cityWindow(fresh("ceiling"), 45, HOUR);
      expect(window.stripes).toBe(RATE_STRIPES);
      const now = bucketStart(20);
      // The stripes are stored by the first take (the migration stores those of the city's own windows).
      expect((await takeSlot(t().db, window, now)).allowed).toBe(true);
      expect(await stripeRows(window.scope)).toHaveLength(RATE_STRIPES);
      // 90 takers of distinct subjects: exactly the 44 left pass, at once.
      expect(await parallelTakes(90, () => window, now)).toBe(44);
      const rows = await stripeRows(window.scope);
      expect(rows.reduce((a, r) => a + r.n, 0)).toBe(45);
      // Every stripe holds its share exactly: the limit cut in 32 (13 stripes of 2, 19 of 1).
      for (const r of rows) expect(r.n, r.subject).toBe(stripeLimit(window, Number(r.subject.split("/")[1])));
      // Refused: Retry-After is when the stripes' bucket leaves the window.
      expect(await takeSlot(t().db, window, now)).toMatchObject({ allowed: false, retryAfterSeconds: HOUR + 300 });
      // A window and a bucket later, the whole limit again, and no more.
      expect(await parallelTakes(60, () => window, new Date(now.getTime() + (HOUR + 300) * 1000))).toBe(45);
    },
    HEAVY_TEST_MS,
  );

  it("creates a city-wide window's stripes when none is stored, and counts the first take in one", async () => {
    const window = cityWindow(fresh("unstored"), 10, HOUR);
    const now = bucketStart(30);
    expect(await takeSlot(t().db, window, now)).toMatchObject({ allowed: true, used: 1, remaining: 0 });
    const rows = await stripeRows(window.scope);
    expect(rows).toHaveLength(10);
    expect(rows.reduce((a, r) => a + r.n, 0)).toBe(1);
    expect(await parallelTakes(20, () => window, now)).toBe(9);
  });

  it("gives parallel takers of a city-wide window distinct stripes: none waits on a lock while a stripe is free", async () => {
    const other = await t().openAnotherInstance();
    if (!other) return; // PGlite: one connection, nothing runs in parallel
    try {
      const window = cityWindow(fresh("nowait"), 64, HOUR);
      const now = bucketStart(40);
      await takeSlot(t().db, window, now); // stores the stripes
      const holders = 8;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let taken = 0;
      // Eight transactions (on two instances) take the window and hold their stripe's lock until released.
      const held = Array.from({ length: holders }, (_, i) =>
        (i % 2 ? other.db : t().db).transaction(async (tx) => {
          const slot = await takeSlot(tx as unknown as Database, window, now);
          taken++;
          await released;
          return slot.allowed;
        }),
      );
      // Until every holder has taken, or one waits on a lock (a row every taker shares would make the second wait).
      let waiting = 0;
      while (taken < holders && waiting === 0) waiting = await lockWaits();
      // The rows the holders changed and have not committed (their xmax, seen from outside, is the holder's).
      const charged = await t().db.execute(sql`SELECT count(*)::int AS n FROM rate_windows WHERE scope = ${window.scope} AND xmax::text <> '0'`);
      release();
      expect(waiting).toBe(0);
      expect(await Promise.all(held)).toEqual(Array(holders).fill(true));
      // Each held a stripe of its own: eight rows locked and charged at once, beside the first take's.
      expect(Number(rowsOf<{ n: number }>(charged)[0]!.n)).toBe(holders);
      expect((await stripeRows(window.scope)).filter((r) => r.n > 0).length).toBe(holders + 1);
    } finally {
      await other.close();
    }
  });

  it("waits for a held stripe rather than refuse when every stripe with room is held, and is let through", async () => {
    const other = await t().openAnotherInstance();
    if (!other) return;
    try {
      // Two stripes of two: two holders hold both, and a third taker finds none free.
      const window = cityWindow(fresh("held"), 4, HOUR);
      const two = { ...window, stripes: 2 };
      const now = bucketStart(50);
      expect((await takeSlot(t().db, two, now)).allowed).toBe(true);
      // Room left: 3 (the first take's stripe has one more, the other two).
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let taken = 0;
      const holders = [t().db, other.db].map((db) =>
        db.transaction(async (tx) => {
          const slot = await takeSlot(tx as unknown as Database, two, now);
          taken++;
          await released;
          return slot.allowed;
        }),
      );
      while (taken < 2) await new Promise((r) => setImmediate(r));
      // Both stripes are held now: the third taker waits for one (a lock not granted), then takes the room left.
      let settled = false;
      const third = takeSlot(other.db, two, now).finally(() => (settled = true));
      let waited = 0;
      while (!settled && waited === 0) waited = await lockWaits();
      release();
      expect(waited).toBe(1);
      expect(await Promise.all(holders)).toEqual([true, true]);
      expect((await third).allowed).toBe(true);
      expect((await takeSlot(t().db, two, now)).allowed).toBe(false);
      expect((await stripeRows(window.scope)).map((r) => r.n)).toEqual([2, 2]);
    } finally {
      await other.close();
    }
  });
});
