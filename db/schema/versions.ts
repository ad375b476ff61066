import { bigint, pgTable, text } from "drizzle-orm/pg-core";

/**
 * One row per version scope (a group of tables that cached reading doors read). Triggers on those
 * tables (migration 0014) add one to the scope's version in the same transaction as every
 * statement that really changes a row, so a reader that sees the version unchanged knows the
 * tables are unchanged. Nothing else writes here.
 */
export const cityVersions = pgTable("city_versions", {
  scope: text("scope").primaryKey(),
  version: bigint("version", { mode: "number" }).notNull(),
});
