import type { Database } from "@/db/client";
import { identityLog } from "./identity-log";
import type { PublishedLogRow } from "./transparency-log";

/** The most key events a citizen's page shows, newest first; the whole history is the identity log. */
export const KEY_HISTORY_ROWS = 50;

/** A citizen's key events as the identity log publishes them (by its DID index), newest first. */
export async function readKeyHistory(db: Database, did: string, limit = KEY_HISTORY_ROWS): Promise<PublishedLogRow[]> {
  return identityLog.readCitizenRows(db, did, limit);
}
