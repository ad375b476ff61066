import { sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

/**
 * The version scopes and the tables whose triggers bump them (db/migrations/0015_city_versions.sql):
 * citizens (citizens), residency_log (residency_log), ward (ward_notes); identity_log (identity_log, migration 0032).
 */
export const VERSION_SCOPES = ["citizens", "residency_log", "ward", "identity_log"] as const;
export type VersionScope = (typeof VERSION_SCOPES)[number];

// Every scope's version, the sum of its stripes (migration 0047: 16 rows a scope), in one fixed
// statement: on PGlite about half the cost of the query builder's.
const ALL_VERSIONS = sql`SELECT scope, sum(version)::bigint AS version FROM city_versions GROUP BY scope`;

/** The current versions of `scopes`, in the order asked. A scope with no row reads 0 (its first bump inserts it). */
export async function readVersions(db: Database, scopes: readonly VersionScope[]): Promise<number[]> {
  const rows = rowsOf<{ scope: string; version: string | number }>(await db.execute(ALL_VERSIONS));
  return scopes.map((scope) => Number(rows.find((r) => r.scope === scope)?.version ?? 0));
}
