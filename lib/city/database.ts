import { type Database, openConfiguredDatabase } from "@/db/client";
import { upgradeDatabase } from "@/lib/city/upgrade";

// One database per process, kept on globalThis so that dev-server reloads do not open a second
// PGlite on the same folder (two openers of one folder silently diverge).
const holder = globalThis as typeof globalThis & { __cityDatabase?: Promise<Database> };

/**
 * The process's database. PGlite is migrated and upgraded on first use; a server database is
 * upgraded at deploy time with `npm run db:migrate`, never by a serverless instance on its own.
 */
export function getDb(): Promise<Database> {
  holder.__cityDatabase ??= (async () => {
    const open = await openConfiguredDatabase();
    if (open.driver === "pglite") await upgradeDatabase(open);
    return open.db;
  })().catch((err: unknown) => {
    holder.__cityDatabase = undefined;
    throw err;
  });
  return holder.__cityDatabase;
}

/** Lets tests hand the door layer a database of their own. */
export function useDatabase(db: Database): void {
  holder.__cityDatabase = Promise.resolve(db);
}
