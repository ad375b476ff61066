import { sql } from "drizzle-orm";
import { bigint, check, pgTable, primaryKey, smallint, text } from "drizzle-orm/pg-core";

/**
 * Each version scope (a group of tables that cached reading doors read) counted in 16 stripes.
 * Triggers on those tables (migration 0015) add one to a stripe of the scope (the writing
 * backend's, migration 0047) in the same transaction as every statement that really changes a
 * row, so a reader that sees the sum of the stripes unchanged knows the tables are unchanged.
 * Nothing else writes here.
 */
export const cityVersions = pgTable(
  "city_versions",
  {
    scope: text("scope").notNull(),
    stripe: smallint("stripe").notNull(),
    version: bigint("version", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.stripe] }), check("city_versions_stripes", sql`${t.stripe} BETWEEN 0 AND 15`)],
);
