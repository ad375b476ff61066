import { sql } from "drizzle-orm";
import { bigint, check, integer, pgTable, smallint } from "drizzle-orm/pg-core";

/**
 * The census counts of citizens, kept by statement-level triggers on `citizens` in the same
 * transaction as every write that changes them (migration 0014), so reading the census costs a
 * sum of 16 rows, not a count over the whole city. Striped (migration 0047): a transaction moves
 * a stripe no other transaction holds (city_stripe(), migration 0058), so writes of different
 * citizens do not queue on one row; only the sum of the stripes is a count.
 */
export const censusCounts = pgTable(
  "census_counts",
  {
    stripe: smallint("stripe").primaryKey(),
    beds: integer("beds").notNull(),
    citizens: integer("citizens").notNull(),
    house: integer("house").notNull(),
    outside: integer("outside").notNull(),
  },
  (t) => [check("census_counts_stripes", sql`${t.stripe} BETWEEN 0 AND 15`)],
);

/**
 * The residency log's rows counted per hour (UTC hours since the epoch), kept by a statement
 * trigger on residency_log in the appending transaction (migration 0040): the tide (the log rows
 * of the last 24 hours, read by every poll) sums whole hours here and counts log rows only in the
 * window's first, partial hour.
 */
export const tideHours = pgTable("tide_hours", {
  hour: bigint("hour", { mode: "number" }).primaryKey(),
  rows: integer("rows").notNull(),
});
