import { sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

export interface Census {
  occupancy: number;
  citizens: number;
  house: number;
  outside: number;
  hotelGuests: number;
  lotsOccupied: number;
  fakeTide: 0;
  tide: number;
}

/**
 * What each count means, published beside the counts. Every count is of real rows: the counts of
 * citizens are kept by triggers in the same transaction as every write to `citizens` (table
 * census_counts, migration 0014), the tide is counted from the log; nothing is seeded, rounded
 * or invented.
 */
export const CENSUS_DEFINITIONS = {
  occupancy: "beds really assigned to citizens right now",
  citizens: "known citizens, bound or away (exported citizens are not counted)",
  house: "citizens bound to the city and holding a bed",
  outside: "citizens who left and have not returned (away)",
  hotelGuests: "the hotel guest count: real assigned beds, the same number as occupancy",
  lotsOccupied: "lots occupied; land is never sold and a held (locked) lot is not occupied, so no lot can be occupied and this is 0 by law",
  fakeTide: "always 0: the city counts no fake arrivals",
  tide: "residency log events (admit, exit, return, export) in the last 24 hours",
} as const;

/**
 * The census counts of citizens as SQL columns (beds, citizens, house, outside), for one-statement
 * reads: the sums of census_counts' 16 stripes (migration 0047; a stripe alone counts nothing).
 */
export const CENSUS_COUNTS_SQL = sql`SELECT sum(beds)::int AS beds, sum(citizens)::int AS citizens, sum(house)::int AS house, sum(outside)::int AS outside FROM census_counts`;

const TIDE_WINDOW_MS = 86_400_000;

const HOUR_MS = 3_600_000;

/**
 * The tide as one scalar subquery, for statements that answer it beside other things (the poll,
 * the return, the leave): the log rows after the window's start, counted as the whole hours after
 * the hour the window starts in (tide_hours, kept by migration 0040's trigger: at most 25 rows)
 * plus the log rows of that first hour after the window's start (an index range on
 * residency_log.at over at most an hour). The same count as the log's rows after the start, at a
 * cost that does not grow with a day's arrivals and departures (BENCHMARKS.md).
 */
export function tideSql(now: Date) {
  const start = now.getTime() - TIDE_WINDOW_MS;
  const hour = Math.floor(start / HOUR_MS);
  return sql`(
    (SELECT coalesce(sum(h.rows), 0)::int FROM tide_hours h WHERE h.hour > ${hour}::bigint)
    + (SELECT count(*)::int FROM residency_log l WHERE l.at > ${new Date(start).toISOString()}::timestamptz AND l.at < ${new Date((hour + 1) * HOUR_MS).toISOString()}::timestamptz))`;
}

/** The census in one statement: the kept counts and the tide (an index range on residency_log.at). */
export async function readCensus(db: Database, now: Date): Promise<Census & { tideChangesAt: Date | null }> {
  const since = new Date(now.getTime() - TIDE_WINDOW_MS).toISOString();
  type Counts = { beds: number; citizens: number; house: number; outside: number; tide: number; tide_oldest_ms: number | null };
  const result = await db.execute(sql`
    SELECT c.beds, c.citizens, c.house, c.outside,
      t.tide, t.tide_oldest_ms
    FROM (SELECT count(*)::int AS tide, (extract(epoch FROM min(l.at)) * 1000)::float8 AS tide_oldest_ms FROM residency_log l WHERE l.at > ${since}::timestamptz) t, (${CENSUS_COUNTS_SQL}) c`);
  const row = rowsOf<Counts>(result)[0]!;
  return {
    occupancy: row.beds,
    citizens: row.citizens,
    house: row.house,
    outside: row.outside,
    hotelGuests: row.beds,
    lotsOccupied: 0,
    fakeTide: 0,
    tide: row.tide,
    // The tide next drops with no write when its oldest row leaves the 24 h window.
    tideChangesAt: row.tide_oldest_ms === null ? null : new Date(Number(row.tide_oldest_ms) + TIDE_WINDOW_MS),
  };
}
