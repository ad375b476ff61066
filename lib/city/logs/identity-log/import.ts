import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { identityLog as identityLogRows, identityLogTables, requestKeys } from "@/db/schema";
import { rowsOf } from "@/db/sql";
import { CityError } from "@/lib/errors";
import { identityLog } from "./log";

/** What the database knew of one key before the identity log existed (request_keys, migration 0031). */
type KeyFact = { did: string; thumbprint: string; public_key: string; nbf: Date | string; rotated_at: Date | string | null; successor: string | null };

/**
 * Earlier key facts, imported once into the identity log (npm run db:migrate, lib/city/upgrade.ts):
 * for every citizen with keys on record (request_keys: its controller key and any key rotated away
 * and not yet swept) and no row in the identity log, a `key-bound` row per key and a `key-rotated`
 * row per rotation still on record, each saying `imported: true` and carrying the time the database
 * recorded (`current_since`, `rotated_at`), never an invented one. The rows' own `at` is the import's.
 * A citizen already in the identity log (or pending there) is left alone, so a second run imports
 * nothing. The entries are recorded pending in one transaction, then integrated (in batches, under
 * the head). Returns how many rows it appended; none when this instance is not the identity log's
 * recorded identity.
 */
export async function importEarlierKeyFacts(db: Database, now = new Date()): Promise<number> {
  try {
    const imported = await db.transaction(async (tx) => {
      const handle = tx as Database;
      // Two instances migrating at once: the head's lock makes the second wait, then find the first's entries.
      await identityLog.lockLogHead(handle);
      const facts = rowsOf<KeyFact>(
        await handle.execute(sql`
          SELECT k.did, k.thumbprint, k.public_key, k.nbf, k.rotated_at,
            (SELECT n.thumbprint FROM ${requestKeys} n WHERE n.did = k.did AND k.rotated_at IS NOT NULL AND n.nbf = k.rotated_at LIMIT 1) AS successor
          FROM ${requestKeys} k
          WHERE NOT EXISTS (SELECT 1 FROM ${identityLogRows} l WHERE l.did = k.did)
            AND NOT EXISTS (SELECT 1 FROM ${identityLogTables.pending} p WHERE p.did = k.did)
          ORDER BY k.nbf, k.did, k.thumbprint`),
      );
      const iso = (t: Date | string) => new Date(t).toISOString();
      const entries = facts.flatMap((f): Array<{ when: string; entry: Parameters<typeof identityLog.appendLog>[1] }> => [
        {
          when: iso(f.nbf),
          entry: {
            event: "key-bound",
            did: f.did,
            at: now,
            details: { imported: true, thumbprint: f.thumbprint, public_key: f.public_key, current_since: iso(f.nbf) },
          },
        },
        ...(f.rotated_at === null
          ? []
          : ([
              {
                when: iso(f.rotated_at),
                entry: {
                  event: "key-rotated",
                  did: f.did,
                  at: now,
                  details: { imported: true, from_thumbprint: f.thumbprint, to_thumbprint: f.successor, rotated_at: iso(f.rotated_at) },
                },
              },
            ] as const)),
      ]);
      // In the order the facts happened (a key bound before its rotation away).
      entries.sort((a, b) => (a.when < b.when ? -1 : a.when > b.when ? 1 : 0));
      for (const { entry } of entries) await identityLog.appendLog(handle, entry);
      return entries.length;
    });
    // Integrated now, batch by batch (waiting for the head: this runs at migration, not in a request).
    while ((await identityLog.integratePending(db, now, { wait: true })) !== 0);
    return imported;
  } catch (err) {
    // Not this instance's log to sign: the instance that is imports on its next migration.
    if (err instanceof CityError && err.code === "log_identity_mismatch") return 0;
    throw err;
  }
}
