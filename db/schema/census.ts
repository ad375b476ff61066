import { sql } from "drizzle-orm";
import { boolean, check, integer, pgTable } from "drizzle-orm/pg-core";

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
