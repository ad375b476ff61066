import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";

/**
 * Holds a transaction-scoped advisory lock on a name until the write's transaction ends. Every
 * count-then-write of the city takes one, so a limit holds across instances and parallel requests.
 * `shared` holders run side by side and only wait for an exclusive holder of the same name.
 */
export async function holdLock(db: Database, name: string, mode: "exclusive" | "shared" = "exclusive"): Promise<void> {
  await db.execute(
    mode === "shared"
      ? sql`SELECT pg_advisory_xact_lock_shared(hashtextextended(${name}, 0))`
      : sql`SELECT pg_advisory_xact_lock(hashtextextended(${name}, 0))`,
  );
}
