import { migrateDatabase, type OpenDatabase } from "@/db/client";
import { logLine } from "@/lib/logger";
import { importEarlierKeyFacts } from "@/lib/city/logs/identity-log";
import { catchUpLogTree } from "@/lib/city/logs/residency-log";
import { backfillNameKeys, type NameKeyReport } from "@/lib/city/directory";

/** What the data steps after the SQL migrations did. */
export interface UpgradeReport {
  nameKeys: NameKeyReport;
  /** Identity log rows imported for key facts from before the log existed (once; 0 after). */
  importedKeyFacts: number;
}

/**
 * Brings a database to what this build expects: the SQL migrations, then the data steps a SQL
 * migration cannot compute. Run by `npm run db:migrate` (scripts/migrate.ts) and, for the embedded
 * PGlite, by the process's first use of its database (./database.ts). Each step touches nothing
 * when the data is current.
 */
export async function upgradeDatabase(open: OpenDatabase): Promise<UpgradeReport> {
  await migrateDatabase(open);
  // The published normal form of names (Unicode tables). Two citizens whose names now share a
  // form are reported, never merged (one log line each).
  const nameKeys = await backfillNameKeys(open.db);
  for (const c of nameKeys.collisions)
    logLine("error", "name form collision: kept apart, the citizen keeps its key of the older form", { did: c.did, held_by: c.heldBy });
  // The residency log's Merkle tree over rows written before it existed (once; nothing when current).
  await catchUpLogTree(open.db);
  // Key facts from before the identity log (controllers bound or rotated): imported once, saying so.
  const importedKeyFacts = await importEarlierKeyFacts(open.db);
  return { nameKeys, importedKeyFacts };
}
