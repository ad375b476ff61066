import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { identityLog } from "@/lib/city/logs/identity-log";
import type { PublishedLogRow } from "@/lib/city/logs/transparency-log";

/** The most key events a citizen's page shows, newest first; the whole history is the identity log. */
export const KEY_HISTORY_ROWS = 50;

/** A citizen's key events as the identity log publishes them (by its DID index), newest first. */
export async function readKeyHistory(db: Database, did: string, limit = KEY_HISTORY_ROWS): Promise<PublishedLogRow[]> {
  return identityLog.readCitizenRows(db, did, limit);
}

/**
 * The public key (hex) of a key ever bound to this citizen as its controller, by its RFC 7638
 * thumbprint (a signature's keyid), or null. Every way a key becomes a controller leaves it in one
 * of these: request_keys (the key now, and keys rotated away until their exp), the identity log's
 * key-bound and key-rotated rows (their public_key; an entry still pending integration too), and
 * the committed next key a completed recovery made the controller (its recoveries row). One
 * statement that writes nothing, by the DID's indexes.
 */
export async function keyEverBound(db: Database, did: string, thumbprint: string): Promise<string | null> {
  const [row] = rowsOf<{ public_key: string }>(
    await db.execute(sql`
      SELECT k.public_key FROM (
        SELECT public_key FROM request_keys WHERE did = ${did}
        UNION SELECT details->>'public_key' FROM identity_log WHERE did = ${did} AND event IN ('key-bound', 'key-rotated')
        UNION SELECT details->>'public_key' FROM identity_log_pending WHERE did = ${did} AND event IN ('key-bound', 'key-rotated')
        UNION SELECT next_public_key FROM recoveries WHERE did = ${did} AND state = 'completed' AND via = 'next-key'
      ) k
      WHERE k.public_key ~ '^[0-9a-f]{64}$' AND city_key_thumbprint(k.public_key) = ${thumbprint}
      LIMIT 1`),
  );
  return row?.public_key ?? null;
}
