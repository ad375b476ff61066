import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { chargeStore, storeBound, storeGauges } from "@/lib/city/bounds";
import { CityError } from "@/lib/errors";
import { createTestDatabase, describeMissingServer, type TestDatabase } from "../support/databases";
import { type Bounds, setStripeCounters, stripeCounters, stripesOf } from "../support/store-stripes";
import { awayFromHourTurn } from "../support/clock";

/*
 * The store bounds' stripes (migration 0044) under real parallel transactions on PostgreSQL: the
 * bounds are never passed, no write is refused while the store has room for it (the published
 * slack is 0), writers of different citizens hold different stripe rows, and a writer whose own
 * stripe is full takes another's room. PGlite runs one transaction at a time, so this suite is
 * PostgreSQL's only (without TEST_DATABASE_URL it is a named skip, a failure in CI).
 */
const TOTAL = 1_000_000;
const PER_HOUR = 100_000;
const SHARE = 25_000;
const BOUNDS: Bounds = { total: TOTAL, perHour: PER_HOUR, newcomerPerHour: SHARE };
process.env.CITY_STORE_VAULT_BYTES = String(TOTAL);
process.env.CITY_STORE_VAULT_BYTES_PER_HOUR = String(PER_HOUR);
process.env.CITY_STORE_NEWCOMER_PERCENT = "25";
const IN_FLIGHT = 48;
const NAME = "store stripes on PostgreSQL: parallel charges at a bound's edge";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const awayFromTheHour = () => awayFromHourTurn(10_000);

if (!process.env.TEST_DATABASE_URL) describeMissingServer(NAME);
else
  describe(NAME, () => {
    let handle: (TestDatabase & { dispose: () => Promise<void> }) | undefined;
    let pool: pg.Pool | undefined;
    let wide: Database;
    const t = () => handle!;

    beforeAll(async () => {
      handle = await createTestDatabase("pg");
      const name = rowsOf<{ d: string }>(await handle.db.execute(sql`SELECT current_database() AS d`))[0]!.d;
      const url = new URL(process.env.TEST_DATABASE_URL!);
      url.pathname = `/${name}`;
      // A pool as wide as the writers: every charge in flight at once, each in its own transaction.
      pool = new pg.Pool({ connectionString: url.toString(), max: IN_FLIGHT + 2 });
      // The database is dropped WITH (FORCE) at the end: an idle client it ends is no test's failure.
      pool.on("error", () => undefined);
      wide = drizzle({ client: pool }) as unknown as Database;
    }, 60_000);
    afterAll(async () => {
      await pool?.end();
      await handle?.dispose();
    }, 60_000);

    /** One write's charge in a transaction of its own: true when charged, the refusal's limit name when refused. */
    const charge = (bytes: number, newcomer: boolean) =>
      wide
        .transaction(async (tx) => {
          await chargeStore(tx as Database, { store: "vault", bytes, newcomer: sql`${newcomer}::boolean`, now: new Date() });
          return { bytes, refused: null as string | null };
        })
        .catch((err: unknown) => {
          if (err instanceof CityError && err.code === "city_full") return { bytes, refused: err.options.limit!.name };
          throw err;
        });

    const dimensions = [
      {
        bound: "total",
        name: "city_vault_bytes",
        newcomer: false,
        start: { total: TOTAL - 20_000, hour: 0, newcomer: 0 },
        key: "total" as const,
        limit: TOTAL,
      },
      {
        bound: "hour",
        name: "city_vault_bytes_per_hour",
        newcomer: false,
        start: { total: 0, hour: PER_HOUR - 20_000, newcomer: 0 },
        key: "hour" as const,
        limit: PER_HOUR,
      },
      {
        bound: "newcomers' share",
        name: "city_vault_newcomer_bytes_per_hour",
        newcomer: true,
        start: { total: 0, hour: SHARE - 20_000, newcomer: SHARE - 20_000 },
        key: "newcomer" as const,
        limit: SHARE,
      },
    ];
    for (const d of dimensions)
      for (const on of ["spread", "one"] as const)
        it(`${IN_FLIGHT} parallel writers at the ${d.bound} bound's edge (stripes ${on === "spread" ? "rebalanced" : "as migration 0044 leaves them"}): never past it, none refused while its bytes were left`, async () => {
          await awayFromTheHour();
          await setStripeCounters(t().db, "vault", d.start, BOUNDS, on);
          // 20,000 bytes of room (312 a stripe) for 48 writes of 200 to 1,000 bytes (28,800 together):
          // some fit one stripe alone, some need the stripes together, and not all fit.
          const sizes = Array.from({ length: IN_FLIGHT }, (_, i) => 200 + ((i * 331) % 801));
          const results = await Promise.all(sizes.map((b) => charge(b, d.newcomer)));
          const after = await stripeCounters(t().db, "vault");
          const charged = results.filter((r) => r.refused === null).reduce((sum, r) => sum + r.bytes, 0);
          // Exact accounting: the counts moved by exactly the charged bytes, in every dimension.
          expect(after).toEqual({
            total: d.start.total + charged,
            hour: d.start.hour + charged,
            newcomer: d.start.newcomer + (d.newcomer ? charged : 0),
          });
          // Never past the bound; and every refusal names it and was for more bytes than are left now
          // (charges only take room, so it had less room than its bytes when it was refused: no slack).
          expect(after[d.key]).toBeLessThanOrEqual(d.limit);
          const refused = results.filter((r) => r.refused !== null);
          expect(refused.length).toBeGreaterThan(0);
          expect(new Set(refused.map((r) => r.refused))).toEqual(new Set([d.name]));
          expect(Math.min(...refused.map((r) => r.bytes))).toBeGreaterThan(d.limit - after[d.key]);
          // No stripe past its share once the shares are split, and the gauges are the SQL sums.
          for (const s of await stripesOf(t().db, "vault"))
            expect(s[d.key]).toBeLessThanOrEqual(d.key === "total" ? s.shareTotal : d.key === "hour" ? s.shareHour : s.shareNewcomer);
          const gauges = (await storeGauges(t().db, new Date())).vault;
          expect({ total: gauges.bytes, hour: gauges.bytes_this_hour, newcomer: gauges.newcomer_bytes_this_hour }).toEqual(after);
        });

    it("writers of different citizens hold different stripe rows: 16 open transactions each charged, none waited for a lock", async () => {
      // A wait for a row shows as a lock not granted (on the holder's transaction id) of a backend of this database.
      await awayFromTheHour();
      // Charged through the domain: the newcomers' line of the total as it splits it (migration 0051).
      await setStripeCounters(t().db, "vault", { total: 0, hour: 0, newcomer: 0 }, { ...BOUNDS, newcomerTotal: storeBound("vault").newcomerTotal });
      const before = await stripesOf(t().db, "vault");
      const writers = 16;
      let charged = 0;
      let release!: () => void;
      const barrier = new Promise<void>((resolve) => (release = resolve));
      // Each transaction charges (1000 + i bytes, so its stripe tells who charged it) and stays open
      // until every one has charged: had two needed one row, the second would wait for the first.
      const open = Array.from({ length: writers }, (_, i) =>
        wide.transaction(async (tx) => {
          await chargeStore(tx as Database, { store: "vault", bytes: 1000 + i, newcomer: sql`false`, now: new Date() });
          charged += 1;
          await barrier;
        }),
      );
      let waited = 0;
      while (charged < writers && waited === 0) {
        waited = Number(
          rowsOf<{ n: string }>(
            await t().db.execute(
              sql`SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE a.datname = current_database() AND NOT l.granted`,
            ),
          )[0]!.n,
        );
        if (waited === 0 && charged < writers) await sleep(20);
      }
      release();
      await Promise.all(open);
      expect(waited).toBe(0);
      expect(charged).toBe(writers);
      // Which rows moved: 16 stripes, each by exactly one writer's bytes.
      const after = await stripesOf(t().db, "vault");
      const moved = after.map((s, k) => s.total - before[k]!.total).filter((delta) => delta !== 0);
      expect(moved.sort((a, b) => a - b)).toEqual(Array.from({ length: writers }, (_, i) => 1000 + i));
    });

    /** Calls the charge with a chosen home stripe (the code picks it at random). */
    const chargeFrom = async (home: number, bytes: number) =>
      rowsOf<{ ok: boolean }>(
        await t().db.execute(
          sql`SELECT city_store_charge('vault', ${bytes}::bigint, false, date_trunc('hour', now()), ${home}::int, ${TOTAL}::bigint, ${PER_HOUR}::bigint, ${SHARE}::bigint) AS ok`,
        ),
      )[0]!.ok;

    it("a writer whose own stripe is full takes the next stripe's room, and only that row moves", async () => {
      await awayFromTheHour();
      await setStripeCounters(t().db, "vault", { total: 0, hour: 0, newcomer: 0 }, BOUNDS);
      // Stripe 5's hour is full (its share is PER_HOUR / 64 = 1,562 or 1,563 bytes).
      await t().raw(`UPDATE city_store_stripes SET hour_bytes = share_hour WHERE store = 'vault' AND stripe = 5`);
      const before = await stripesOf(t().db, "vault");
      expect(await chargeFrom(5, 700)).toBe(true);
      const after = await stripesOf(t().db, "vault");
      const changed = after.filter((s, k) => s.hour !== before[k]!.hour || s.total !== before[k]!.total);
      expect(changed.map((s) => s.stripe)).toEqual([6]);
      expect(after[6]!.hour - before[6]!.hour).toBe(700);
      // Borrowed without the all-stripes path: the shares were not split again, the full stripe is as it was.
      expect(after.map((s) => s.shareHour)).toEqual(before.map((s) => s.shareHour));
      expect(after[5]).toEqual(before[5]);
    });

    it("when every stripe with room is held, a writer waits for that one stripe alone and takes it, without the all-stripes path", async () => {
      await awayFromTheHour();
      await setStripeCounters(t().db, "vault", { total: 0, hour: 0, newcomer: 0 }, BOUNDS);
      // Every stripe's hour full but stripe 7's.
      await t().raw(`UPDATE city_store_stripes SET hour_bytes = share_hour WHERE store = 'vault' AND stripe <> 7`);
      const before = await stripesOf(t().db, "vault");
      const call = (home: number) =>
        sql`SELECT city_store_charge('vault', 100::bigint, false, date_trunc('hour', now()), ${home}::int, ${TOTAL}::bigint, ${PER_HOUR}::bigint, ${SHARE}::bigint) AS ok`;
      let release!: () => void;
      const barrier = new Promise<void>((resolve) => (release = resolve));
      let holding = false;
      const first = wide.transaction(async (tx) => {
        const ok = rowsOf<{ ok: boolean }>(await tx.execute(call(7)))[0]!.ok;
        holding = true;
        await barrier;
        return ok;
      });
      while (!holding) await sleep(10);
      const second = wide.transaction(async (tx) => rowsOf<{ ok: boolean }>(await tx.execute(call(0)))[0]!.ok);
      // The second writer waits (a lock not granted) for the first: stripe 7 is the only one with room.
      let waiting = 0;
      while (waiting === 0)
        waiting = Number(
          rowsOf<{ n: string }>(
            await t().db.execute(
              sql`SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE a.datname = current_database() AND NOT l.granted`,
            ),
          )[0]!.n,
        );
      release();
      expect(await first).toBe(true);
      expect(await second).toBe(true);
      const after = await stripesOf(t().db, "vault");
      // Only stripe 7 moved, by both writes; nothing was spread again.
      expect(after.filter((s, k) => s.hour !== before[k]!.hour).map((s) => [s.stripe, s.hour - before[s.stripe]!.hour])).toEqual([[7, 200]]);
      expect(after.filter((s, k) => s.stripe !== 7 && JSON.stringify(s) !== JSON.stringify(before[k]))).toEqual([]);
    });

    it("a write no single stripe has room for is counted against the stripes together, and the bytes are spread again", async () => {
      await awayFromTheHour();
      // 5,000 bytes of the hour left: 78 or 79 a stripe; a write of 4,000 fits only the store as a whole.
      await setStripeCounters(t().db, "vault", { total: 0, hour: PER_HOUR - 5_000, newcomer: 0 }, BOUNDS);
      expect(await chargeFrom(0, 4_000)).toBe(true);
      expect(await stripeCounters(t().db, "vault")).toEqual({ total: 4_000, hour: PER_HOUR - 1_000, newcomer: 0 });
      const rooms = (await stripesOf(t().db, "vault")).map((s) => s.shareHour - s.hour);
      expect(Math.max(...rooms) - Math.min(...rooms)).toBeLessThanOrEqual(1);
      expect(rooms.reduce((a, b) => a + b, 0)).toBe(1_000);
      // 1,001 bytes do not fit (1,000 are left): refused, nothing moves; 1,000 fit exactly.
      const before = await stripesOf(t().db, "vault");
      expect(await chargeFrom(0, 1_001)).toBe(false);
      expect(await stripesOf(t().db, "vault")).toEqual(before);
      expect(await chargeFrom(0, 1_000)).toBe(true);
      expect((await stripeCounters(t().db, "vault")).hour).toBe(PER_HOUR);
    });

    it("freed bytes leave one stripe that holds them, or the stripes together, never below zero", async () => {
      await awayFromTheHour();
      await setStripeCounters(t().db, "vault", { total: 6_400, hour: 0, newcomer: 0 }, BOUNDS);
      // 100 bytes on every stripe: freeing 60 moves one row; freeing 1,000 needs the stripes together.
      const before = await stripesOf(t().db, "vault");
      expect(await chargeFrom(9, -60)).toBe(true);
      const one = await stripesOf(t().db, "vault");
      expect(one.filter((s, k) => s.total !== before[k]!.total).map((s) => [s.stripe, s.total])).toEqual([[9, 40]]);
      expect(await chargeFrom(9, -1_000)).toBe(true);
      expect((await stripeCounters(t().db, "vault")).total).toBe(6_400 - 60 - 1_000);
      expect(await chargeFrom(9, -1_000_000)).toBe(true);
      const empty = await stripesOf(t().db, "vault");
      expect(empty.every((s) => s.total === 0)).toBe(true);
    });

    it("parallel charges and frees of mixed sizes leave counts equal to what was charged, and the gauges say so", async () => {
      await awayFromTheHour();
      await setStripeCounters(t().db, "vault", { total: 50_000, hour: 0, newcomer: 0 }, BOUNDS);
      const sizes = Array.from({ length: IN_FLIGHT }, (_, i) => (i % 3 === 0 ? -(300 + i * 50) : 100 + ((i * 977) % 4_000)));
      const results = await Promise.all(sizes.map((b) => charge(b, b > 0 && b % 7 === 0)));
      expect(results.every((r) => r.refused === null)).toBe(true);
      const net = sizes.reduce((a, b) => a + b, 0);
      const added = sizes.filter((b) => b > 0);
      const after = await stripeCounters(t().db, "vault");
      expect(after).toEqual({
        total: 50_000 + net,
        hour: added.reduce((a, b) => a + b, 0),
        newcomer: added.filter((b) => b % 7 === 0).reduce((a, b) => a + b, 0),
      });
      const gauges = (await storeGauges(t().db, new Date())).vault;
      expect([gauges.bytes, gauges.bytes_this_hour, gauges.newcomer_bytes_this_hour]).toEqual([after.total, after.hour, after.newcomer]);
    });
  });
