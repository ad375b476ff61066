import { sql } from "drizzle-orm";
import { type Database, rowsOf } from "@/db/client";

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

/** The census counts of citizens as SQL columns (beds, citizens, house, outside), for one-statement reads. */
export const CENSUS_COUNTS_SQL = sql`SELECT beds, citizens, house, outside FROM census_counts WHERE id`;

/** The census in one statement: the kept counts and the tide (an index range on residency_log.at). */
export async function readCensus(db: Database, now: Date): Promise<Census> {
  const since = new Date(now.getTime() - 86_400_000).toISOString();
  type Counts = { beds: number; citizens: number; house: number; outside: number; tide: number };
  const result = await db.execute(sql`
    SELECT c.beds, c.citizens, c.house, c.outside,
      (SELECT count(*)::int FROM residency_log l WHERE l.at > ${since}::timestamptz) AS tide
    FROM (${CENSUS_COUNTS_SQL}) c`);
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
  };
}
