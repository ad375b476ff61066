import { sql } from "drizzle-orm";
import { bigint, boolean, check, integer, pgTable } from "drizzle-orm/pg-core";

/**
 * The census counts of citizens, one row, kept by statement-level triggers on `citizens` in the
 * same transaction as every write that changes them (migration 0014), so reading the census costs
 * one row, not a count over the whole city.
 */
export const censusCounts = pgTable(
  "census_counts",
  {
    id: boolean("id").primaryKey().default(true),
    beds: integer("beds").notNull(),
    citizens: integer("citizens").notNull(),
    house: integer("house").notNull(),
    outside: integer("outside").notNull(),
  },
  (t) => [check("census_counts_one_row", sql`${t.id}`)],
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
