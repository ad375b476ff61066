import type { Database } from "@/db/client";
import { CityError } from "@/lib/errors";
import { scanContent } from "@/lib/scan";
import { recordRefusal, RESTRICTION_TRIGGER } from "@/lib/city/restriction";

/**
 * The fail-closed gate in front of every private shelf (locker, checkpoints, vault, mail): keys,
 * seeds and tokens are refused and not stored, the refusal is counted toward the restriction
 * trigger (its row commits even though the write does not), and the answer never echoes the text.
 */
export async function guardShelfContent(db: Database, entry: { did: string; door: string; texts: string[]; now: Date }): Promise<void> {
  for (const text of entry.texts) {
    const verdict = scanContent(text);
    if (verdict.ok) continue;
    const tail = await countRefusal(db, { did: entry.did, door: entry.door, rule: verdict.rule, now: entry.now });
    throw new CityError("content_refused", `${verdict.reason} It was not stored (rule: ${verdict.rule}).${tail}`, { keepWrites: true });
  }
}

/** Whether every text passes the scanner (no statement: the refusal path is guardShelfContent's). */
export function isClean(...texts: string[]): boolean {
  return texts.every((text) => scanContent(text).ok);
}

/** Counts a fail-closed refusal toward the restriction trigger; the words to add when it restricted the citizen. */
export async function countRefusal(db: Database, entry: { did: string; door: string; rule: string; now: Date }): Promise<string> {
  const { restricted } = await recordRefusal(db, entry);
  return restricted ? ` You are now restricted (published trigger: ${RESTRICTION_TRIGGER}); appeal at POST /api/appeal.` : "";
}
