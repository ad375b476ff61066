import { cancelOpenSteps } from "@/lib/city/keys";
import { asc, eq, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { checkpoints, citizens, lockerBags, seals, vaultNotes } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { scanContent } from "@/lib/scan";
import { sha256Hex } from "@/lib/city/canonical";
import { appended, prepareAppend } from "@/lib/city/logs/residency-log";

/** An item the export kept back because the scanner refuses its content today: named, never quoted (a refused bag name is named by its sha256). */
export interface Withheld {
  shelf: "locker" | "checkpoints" | "vault";
  ref: string;
  rule: string;
}

/**
 * Export: the citizen's own bags, checkpoints, vault notes and seals in one answer, then status
 * `exported`, an `export` row and the bed released, in the one transaction. Mail never leaves (it
 * is another citizen's words), nor anything the scanner refuses now; nothing is deleted. The
 * credentials of an exported citizen open nothing more (checked where every caller is resolved).
 *
 * Nothing slow runs under the city-wide log head: the shelves are read and
 * scanned under the citizen's own row lock only, and the head is taken just before the one
 * statement that appends, still before the census moves (the citizens update): the lock order of
 * every appender (row, head, census counts). Under the head nothing that matters can have changed:
 * the citizen's row is held exclusively (FOR NO KEY UPDATE) from the first statement, and every
 * write to its shelves holds the same row (FOR SHARE) for its whole transaction, so its status, bed
 * and shelves are those read when the head is taken.
 */
export async function exportCitizen(db: Database, did: string, now: Date) {
  const [citizen] = await db.select().from(citizens).where(eq(citizens.did, did)).for("no key update");
  if (!citizen || citizen.residencyStatus === "exported") throw new CityError("conflict", "This citizen has already been exported.");
  // One at a time: the export's transaction is one connection.
  const bags = await db.select().from(lockerBags).where(eq(lockerBags.did, did)).orderBy(asc(lockerBags.bag));
  const versions = await db.select().from(checkpoints).where(eq(checkpoints.did, did)).orderBy(asc(checkpoints.version));
  const notes = await db.select().from(vaultNotes).where(eq(vaultNotes.did, did)).orderBy(asc(vaultNotes.id));
  const sealRows = await db.select().from(seals).where(eq(seals.did, did)).orderBy(asc(seals.createdAt), asc(seals.sha256));
  const withheld: Withheld[] = [];
  const passes = (shelf: Withheld["shelf"], ref: string, ...texts: (string | null)[]) => {
    for (const text of texts) {
      if (text === null) continue;
      const verdict = scanContent(text);
      if (!verdict.ok) {
        withheld.push({ shelf, ref, rule: verdict.rule });
        return false;
      }
    }
    return true;
  };
  const data = {
    locker: bags
      .filter((b) => passes("locker", scanContent(b.bag).ok ? b.bag : `sha256:${sha256Hex(b.bag)}`, b.bag, b.content))
      .map((b) => ({ bag: b.bag, content: b.content, bytes: b.bytes, updated_at: b.updatedAt.toISOString() })),
    checkpoints: versions
      .filter((c) => passes("checkpoints", String(c.version), c.content, c.label))
      .map((c) => ({ version: c.version, content: c.content, sha256: c.sha256, bytes: c.bytes, label: c.label, created_at: c.createdAt.toISOString() })),
    vault: notes.filter((n) => passes("vault", String(n.id), n.content)).map((n) => ({ id: n.id, content: n.content, created_at: n.createdAt.toISOString() })),
    seals: sealRows.map((s) => ({ sha256: s.sha256, created_at: s.createdAt.toISOString() })),
  };
  // The export row, recorded pending in the statement that exports: integrated after the commit.
  const exit = await prepareAppend(db, { event: "export", did, at: now, details: { bed_released: citizen.bedId } });
  await db.execute(sql`WITH exported AS (UPDATE ${citizens} SET residency_status = 'exported', bed_id = NULL WHERE did = ${did}), ${exit.ctes} SELECT 1`);
  const { logReceipt } = appended(exit);
  // A step left open (a recovery, a lowered delay) ends with the citizen: nobody can hold or complete it.
  await cancelOpenSteps(db, did, now, "exported");
  // The row's seq is its receipt's, known once integrated: the door's answer takes it from there (settleLogReceipts).
  return { did, bedReleased: citizen.bedId, logSeq: logReceipt.seq, data, withheld };
}
