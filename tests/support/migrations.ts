import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MIGRATIONS_FOLDER, type OpenDatabase, openPglite } from "@/db/client";

/** A copy of the migrations folder whose journal stops before migration `idx`. */
export function migrationsBefore(idx: number): { folder: string; remove: () => void } {
  const folder = mkdtempSync(path.join(os.tmpdir(), "city-migrations-"));
  cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalPath = path.join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx < idx);
  writeFileSync(journalPath, JSON.stringify(journal));
  return { folder, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/** The SQL migrations of `folder` applied to `open`, with its driver's migrator. */
export async function migrateTo(open: OpenDatabase, folder: string): Promise<void> {
  if (open.driver === "pglite") await (await import("drizzle-orm/pglite/migrator")).migrate(open.db as never, { migrationsFolder: folder });
  else await (await import("drizzle-orm/node-postgres/migrator")).migrate(open.db as never, { migrationsFolder: folder });
}

/**
 * A PGlite database in memory migrated only up to the migrations before `idx`, for a test of what
 * migration `idx` does to the rows already stored: write them, then bring the database up to date
 * with upgradeDatabase.
 */
export async function databaseBeforeMigration(idx: number): Promise<{ open: OpenDatabase; dispose: () => Promise<void> }> {
  const migrations = migrationsBefore(idx);
  const open = await openPglite("memory://");
  await migrateTo(open, migrations.folder);
  return {
    open,
    dispose: async () => {
      await open.close();
      migrations.remove();
    },
  };
}
