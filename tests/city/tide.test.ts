import { desc, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { residencyLog } from "@/db/schema";
import { tideSql } from "@/lib/city/census";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { databaseBeforeMigration } from "../support/migrations";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Log rows written at any moment, in any order (the tide counts rows; their chain is not its concern). */
async function logRowsAt(db: Database, moments: Date[]): Promise<void> {
  // Only seq: the same helper writes into a database migrated before 0045 (no ticket column yet).
  const [last] = await db.select({ seq: residencyLog.seq }).from(residencyLog).orderBy(desc(residencyLog.seq)).limit(1);
  let seq = last?.seq ?? 0;
  for (const at of moments) {
    seq += 1;
    await db.execute(sql`INSERT INTO residency_log (seq, event, did, at, details, prev_hash, hash)
      VALUES (${seq}, 'admit', ${`tide-${seq}`}, ${at.toISOString()}::timestamptz, '{}'::jsonb, ${"0".repeat(64)}, ${String(seq).padStart(64, "0")})`);
  }
}

async function tideAt(db: Database, now: Date): Promise<number> {
  return Number(rowsOf<{ tide: number }>(await db.execute(sql`SELECT ${tideSql(now)} AS tide`))[0]!.tide);
}

/** The tide by its definition: the log's rows after the window's start, counted over the log. */
async function countedOverTheLog(db: Database, now: Date): Promise<number> {
  const start = new Date(now.getTime() - DAY).toISOString();
  return Number(rowsOf<{ n: number }>(await db.execute(sql`SELECT count(*)::int AS n FROM residency_log WHERE at > ${start}::timestamptz`))[0]!.n);
}

/** Moments around `base`: whole hours, a millisecond either side of them, and the window's edges of the moments asked. */
function momentsAround(base: number): Date[] {
  const hour = Math.floor(base / HOUR) * HOUR;
  const offsets = [-50, -30, -25, -24, -23.5, -23, -12, -1, 0, 0.5, 1, 2].flatMap((h) => [h * HOUR, h * HOUR - 1, h * HOUR + 1, h * HOUR + 17 * 60_000]);
  return offsets.map((o) => new Date(hour + o)).sort(() => Math.random() - 0.5);
}

describeOnDatabases("the tide, from the hours kept by migration 0040 and the first hour's rows", (t) => {
  it("is the count of the log's rows after the window's start at every moment: on whole hours, a millisecond off them and in between", async () => {
    const base = Date.now();
    await logRowsAt(t().db, momentsAround(base));
    const hour = Math.floor(base / HOUR) * HOUR;
    // Any moment up to a day before the newest row (the trigger forgets hours two days behind it).
    const nows = [0, 1, -1, 17 * 60_000, HOUR - 1, HOUR, HOUR + 1, -HOUR, -20 * HOUR, 2.5 * HOUR].map((o) => new Date(hour + o));
    for (const now of nows) {
      const expected = await countedOverTheLog(t().db, now);
      expect(await tideAt(t().db, now), now.toISOString()).toBe(expected);
    }
    // Rows appended many in one statement are counted too (the trigger is per statement).
    await t().db.execute(sql`
      INSERT INTO residency_log (seq, event, did, at, details, prev_hash, hash)
      SELECT (SELECT max(seq) FROM residency_log) + i, 'exit', 'tide-bulk-' || i, now() - make_interval(mins => i * 7), '{}', repeat('0', 64), lpad('bulk' || i, 64, '0')
      FROM generate_series(1, 300) AS i`);
    for (const now of nows) expect(await tideAt(t().db, now), now.toISOString()).toBe(await countedOverTheLog(t().db, now));
  });
});

describe("migration 0040 on a database that already has a log", () => {
  it(
    "counts the rows appended before it, and the rows after it through its trigger",
    async () => {
      const { open, dispose } = await databaseBeforeMigration(40);
      try {
        const base = Date.now();
        await logRowsAt(open.db, momentsAround(base));
        await upgradeDatabase(open);
        await logRowsAt(open.db, momentsAround(base - 3 * HOUR));
        for (const o of [0, 1, -1, HOUR, -HOUR - 1, 2.5 * HOUR]) {
          const now = new Date(base + o);
          expect(await tideAt(open.db, now), now.toISOString()).toBe(await countedOverTheLog(open.db, now));
        }
      } finally {
        await dispose();
      }
    },
    HEAVY_TEST_MS,
  );
});
