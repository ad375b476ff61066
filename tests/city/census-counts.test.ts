import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { readCensus } from "@/lib/city/census";
import { markSeen } from "@/lib/doors/pipeline/caller";
import { readCensusDoor } from "@/lib/doors/surfaces/discovery";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { exportResidency } from "@/lib/doors/declarations/residency/residency";
import { seedCity } from "@/scripts/bench-seed";
import { insertCitizenRow } from "../support/citizens";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";

/** The stripe city_stripe() gives the transaction (or statement) `tx` runs in. */
const stripeOf = async (tx: Pick<Database, "execute">) => Number(rowsOf<{ s: number }>(await tx.execute(sql`SELECT city_stripe() AS s`))[0]!.s);

describeOnDatabases(
  "census counts kept by the citizens triggers",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    /** The census as readCensus publishes it, and the same counts taken over every citizen row. */
    async function keptAndCounted() {
      const kept = await readCensus(t().db, new Date());
      const [counted] = rowsOf<{ beds: number; citizens: number; house: number; outside: number }>(
        await t().db.execute(sql`
        SELECT count(*) FILTER (WHERE bed_id IS NOT NULL)::int AS beds,
               count(*) FILTER (WHERE residency_status <> 'exported')::int AS citizens,
               count(*) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL)::int AS house,
               count(*) FILTER (WHERE residency_status = 'away')::int AS outside
        FROM citizens`),
      );
      return { kept: { beds: kept.occupancy, citizens: kept.citizens, house: kept.house, outside: kept.outside }, counted: counted! };
    }

    it("stays equal to a full count through parallel admissions, leaves, returns and exports at the doors", async () => {
      const first = await Promise.all(Array.from({ length: 12 }, () => admit()));
      const shared = presentation();
      const live = (bearer: string, action: "leave" | "return") => callDoor(liveDoor, { bearer, body: { action } });
      const answers = await Promise.all([
        ...Array.from({ length: 10 }, () => callDoor(presentGate, { body: presentation() })),
        ...Array.from({ length: 5 }, () => callDoor(presentGate, { body: shared })),
        ...first.slice(0, 4).map((c) => live(c.citizen_secret, "leave")),
        ...first.slice(4, 6).map((c) => live(c.citizen_secret, "leave").then(() => live(c.citizen_secret, "return"))),
        ...first.slice(6, 9).map((c) => callDoor(exportResidency, { bearer: c.citizen_secret, body: {} })),
        // Leaving twice in parallel: one exit, one no-op; the counts move once.
        ...[0, 1].map(() => live(first[9]!.citizen_secret, "leave")),
      ]);
      for (const answer of answers) expect(answer.status, JSON.stringify(answer.body).slice(0, 200)).toBe(200);
      const { kept, counted } = await keptAndCounted();
      expect(kept).toEqual(counted);
      expect(counted.outside).toBeGreaterThanOrEqual(5);
      const census = (await callDoor(readCensusDoor)).body;
      expect([census.occupancy, census.citizens, census.house, census.outside]).toEqual([counted.beds, counted.citizens, counted.house, counted.outside]);
    });

    it("follows direct writes: a multi-row insert, an update that moves some counts, a delete, a bulk seeding", async () => {
      const rows = await Promise.all(Array.from({ length: 6 }, (_, i) => insertCitizenRow(t().db, { bedId: i % 2 ? `bed-t${Date.now()}-${i}` : null })));
      const dids = rows.map((r) => r.did);
      const list = sql.join(
        dids.map((d) => sql`${d}`),
        sql`, `,
      );
      await t().db.execute(sql`UPDATE citizens SET residency_status = 'away', bed_id = NULL WHERE did IN (${list}) AND bed_id IS NOT NULL`);
      await t().db.execute(sql`UPDATE citizens SET residency_status = 'exported' WHERE did = ${dids[0]!}`);
      expect((await keptAndCounted()).kept).toEqual((await keptAndCounted()).counted);
      await t().db.execute(sql`DELETE FROM citizens WHERE did IN (${list})`);
      let { kept, counted } = await keptAndCounted();
      expect(kept).toEqual(counted);
      // The benchmark writes its city with one INSERT ... SELECT generate_series: counted the same way.
      const before = counted;
      await seedCity(t().db, 150);
      ({ kept, counted } = await keptAndCounted());
      expect(kept).toEqual(counted);
      expect(counted.citizens).toBe(before.citizens + 150);
    });

    it("never takes a counts stripe's lock for an update that moves no count (presence, tier)", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite has one connection: nothing can hold the lock meanwhile");
      const me = await admit();
      await t().db.execute(sql`UPDATE citizens SET last_seen_at = now() - interval '1 hour' WHERE did = ${me.did}`);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = t().db.transaction(async (tx) => {
        await tx.execute(sql`SELECT 1 FROM census_counts FOR UPDATE`);
        locked();
        await held;
      });
      await isLocked;
      try {
        // Would wait for the holder (and time out) if the trigger updated a stripe.
        await t().db.transaction(async (tx) => {
          await tx.execute(sql`SET LOCAL lock_timeout = '2s'`);
          await markSeen(tx as never, me.did, new Date());
          await tx.execute(sql`UPDATE citizens SET tier = 'proven' WHERE did = ${me.did}`);
        });
      } finally {
        release();
        await holder;
      }
      const [row] = rowsOf<{ tier: string; seen: boolean }>(
        await t().db.execute(sql`SELECT tier, last_seen_at > now() - interval '1 minute' AS seen FROM citizens WHERE did = ${me.did}`),
      );
      expect(row).toEqual({ tier: "proven", seen: true });
    });

    it("lets writers of different citizens on other backends move the counts while one holds its stripe: no row for the whole city", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite has one connection: nothing can hold the lock meanwhile");
      const [held, other] = await Promise.all([admit(), admit()]);
      let release!: () => void;
      const holding = new Promise<void>((resolve) => (release = resolve));
      let moved!: (stripe: number) => void;
      const holderMoved = new Promise<number>((resolve) => (moved = resolve));
      // The holder moves the counts (a leave: house down, outside up) and keeps its stripe locked.
      const holder = t().db.transaction(async (tx) => {
        await tx.execute(sql`UPDATE citizens SET residency_status = 'away', bed_id = NULL WHERE did = ${held.did}`);
        moved(await stripeOf(tx));
        await holding;
      });
      const holderStripe = await holderMoved;
      try {
        // Another writer takes another stripe and moves the counts without waiting (it would wait for
        // the holder, and fail on the timeout, if every writer shared one row).
        await t().db.transaction(async (tx) => {
          await tx.execute(sql`SET LOCAL lock_timeout = '2s'`);
          await tx.execute(sql`UPDATE citizens SET residency_status = 'away', bed_id = NULL WHERE did = ${other.did}`);
          expect(await stripeOf(tx)).not.toBe(holderStripe);
        });
      } finally {
        release();
        await holder;
      }
      const { kept, counted } = await keptAndCounted();
      expect(kept).toEqual(counted);
      const [stripes] = rowsOf<{ moved: number }>(await t().db.execute(sql`SELECT count(*) FILTER (WHERE outside <> 0)::int AS moved FROM census_counts`));
      expect(stripes!.moved).toBeGreaterThanOrEqual(2);
    });

    it("gives two transactions in flight at once two stripes even when their backends would share one, each kept to its end", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite has one connection: one transaction at a time");
      // 17 transactions open at once on 17 backends (two pools of 10): two of the backends' pids are
      // equal modulo 16 (pigeonhole). By backend (pg_backend_pid() % 16) those two would share a
      // stripe and wait for each other's commit on every write; by transaction they do not.
      const other = (await t().openAnotherInstance())!;
      const handles = [t().db, other.db];
      let release!: () => void;
      const holding = new Promise<void>((resolve) => (release = resolve));
      const open: { pid: Promise<number>; take: (go: boolean) => void; stripes: Promise<number[]> }[] = [];
      const done: Promise<unknown>[] = [];
      try {
        for (let i = 0; i < 17; i++) {
          let pid!: (n: number) => void;
          let take!: (go: boolean) => void;
          let stripes!: (s: number[]) => void;
          const told = new Promise<boolean>((resolve) => (take = resolve));
          open.push({ pid: new Promise((resolve) => (pid = resolve)), take, stripes: new Promise((resolve) => (stripes = resolve)) });
          done.push(
            handles[i % 2]!.transaction(async (tx) => {
              pid(Number(rowsOf<{ pid: number }>(await tx.execute(sql`SELECT pg_backend_pid() AS pid`))[0]!.pid));
              // The stripe taken first is the one for the rest of the transaction.
              stripes((await told) ? [await stripeOf(tx), await stripeOf(tx)] : []);
              await holding;
            }),
          );
        }
        const pids = await Promise.all(open.map((o) => o.pid));
        const first = pids.findIndex((p, i) => pids.some((q, j) => j > i && q % 16 === p % 16));
        const second = pids.findIndex((q, j) => j > first && q % 16 === pids[first]! % 16);
        open[first]!.take(true);
        const [a, again] = await open[first]!.stripes;
        expect(again).toBe(a);
        open[second]!.take(true);
        const [b] = await open[second]!.stripes;
        expect(b, `backends ${pids[first]} and ${pids[second]}`).not.toBe(a);
      } finally {
        for (const o of open) o.take(false);
        release();
        await Promise.all(done);
        await other.close();
      }
      // Held to their transactions' end only: with none held, a transaction takes the first stripe
      // it tries, its transaction id's.
      const [free] = rowsOf<{ first: boolean }>(await t().db.execute(sql`SELECT city_stripe() = txid_current() % 16 AS first`));
      expect(free!.first).toBe(true);
    });

    it("makes a 17th writer wait for the stripe it first tried when all 16 are held, before it moves any stripe's row", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite has one connection: one transaction at a time");
      const other = (await t().openAnotherInstance())!;
      const handles = [t().db, other.db];
      const holders: { stripe: Promise<number>; release: () => void }[] = [];
      const done: Promise<unknown>[] = [];
      try {
        for (let i = 0; i < 16; i++) {
          let took!: (s: number) => void;
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          holders.push({ stripe: new Promise((resolve) => (took = resolve)), release });
          done.push(
            handles[i % 2]!.transaction(async (tx) => {
              took(await stripeOf(tx));
              await released;
            }),
          );
        }
        const held = await Promise.all(holders.map((h) => h.stripe));
        expect(new Set(held).size).toBe(16);
        let first!: (n: number) => void;
        const firstTried = new Promise<number>((resolve) => (first = resolve));
        let pid!: (n: number) => void;
        const late = new Promise<number>((resolve) => (pid = resolve));
        const seventeenth = handles[0]!.transaction(async (tx) => {
          const [me] = rowsOf<{ pid: number; xid: string }>(await tx.execute(sql`SELECT pg_backend_pid() AS pid, txid_current()::text AS xid`));
          pid(Number(me!.pid));
          first(Number(BigInt(me!.xid) % 16n));
          return stripeOf(tx);
        });
        const stripe = await firstTried;
        // It waits on that stripe's lock (pg_stat_activity says so), not on any stripe's row, and
        // does not take a stripe until that stripe's holder ends.
        const ended = seventeenth.then(() => "ended" as const);
        for (;;) {
          const [state] = rowsOf<{ wait_event: string | null }>(await other.db.execute(sql`SELECT wait_event FROM pg_stat_activity WHERE pid = ${await late}`));
          if (state?.wait_event === "advisory") break;
          const next = await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 20, "waiting"))]);
          expect(next, "the 17th writer took a stripe while all 16 were held").toBe("waiting");
        }
        holders[held.indexOf(stripe)]!.release();
        expect(await seventeenth).toBe(stripe);
      } finally {
        for (const h of holders) h.release();
        await Promise.all(done);
        await other.close();
      }
    });

    it("takes a stripe's lock whatever a session set under the setting's name: the stripe it returns is one its transaction holds", async () => {
      for (const value of ["16", "x", "-1", "3", "3/3"]) {
        const [row] = await t().db.transaction(async (tx) => {
          await tx.execute(sql`SELECT set_config('city.stripe', ${value}, true)`);
          const taken = await stripeOf(tx);
          return rowsOf<{ s: number; locked: boolean }>(
            await tx.execute(
              sql`SELECT ${taken}::int AS s, EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 17225 AND objid = ${taken} AND pid = pg_backend_pid() AND granted) AS locked`,
            ),
          );
        });
        expect(row!.s, value).toBeGreaterThanOrEqual(0);
        expect(row!.s, value).toBeLessThanOrEqual(15);
        expect(row!.locked, `the stripe returned after city.stripe = '${value}' is locked`).toBe(true);
      }
    });

    it("zeroes the counts with TRUNCATE citizens, in the truncating transaction", async () => {
      await admit();
      const rolledBack = new Error("rolled back on purpose");
      await expect(
        t().db.transaction(async (tx) => {
          await tx.execute(sql`TRUNCATE citizens CASCADE`);
          expect(await readCensus(tx as never, new Date())).toMatchObject({ occupancy: 0, citizens: 0, house: 0, outside: 0 });
          throw rolledBack;
        }),
      ).rejects.toBe(rolledBack);
      const { kept, counted } = await keptAndCounted();
      expect(kept).toEqual(counted);
      expect(counted.citizens).toBeGreaterThan(0);
    });

    it("keeps its sixteen stripes: a seventeenth, a second stripe 0, a delete and a truncate of census_counts are refused", async () => {
      const [rows] = rowsOf<{ n: number; min: number; max: number }>(
        await t().db.execute(sql`SELECT count(*)::int AS n, min(stripe)::int AS min, max(stripe)::int AS max FROM census_counts`),
      );
      expect(rows).toEqual({ n: 16, min: 0, max: 15 });
      await expect(t().raw("INSERT INTO census_counts (stripe, beds, citizens, house, outside) VALUES (16, 0, 0, 0, 0)")).rejects.toThrow();
      await expect(t().raw("INSERT INTO census_counts (stripe, beds, citizens, house, outside) VALUES (0, 0, 0, 0, 0)")).rejects.toThrow();
      await expect(t().raw("DELETE FROM census_counts")).rejects.toThrow();
      await expect(t().raw("TRUNCATE census_counts")).rejects.toThrow();
      const { kept, counted } = await keptAndCounted();
      expect(kept).toEqual(counted);
    });
  },
  { neon: "transactions: the counts kept by triggers under parallel writes" },
);
