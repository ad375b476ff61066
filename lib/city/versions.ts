import { inArray } from "drizzle-orm";
import type { Database } from "@/db/client";
import { cityVersions } from "@/db/schema";

/**
 * The version scopes and the tables whose triggers bump them (db/migrations/0014_city_versions.sql):
 * citizens (citizens), residency_log (residency_log), ward (ward_notes).
 */
export const VERSION_SCOPES = ["citizens", "residency_log", "ward"] as const;
export type VersionScope = (typeof VERSION_SCOPES)[number];

/**
 * The current versions of `scopes`, in the order asked, in one small statement. A scope with no row
 * reads 0 (the bump inserts its row).
 */
export async function readVersions(db: Database, scopes: readonly VersionScope[]): Promise<number[]> {
  const rows = await db.select().from(cityVersions).where(inArray(cityVersions.scope, [...scopes]));
  return scopes.map((scope) => rows.find((r) => r.scope === scope)?.version ?? 0);
}
