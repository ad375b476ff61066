import type { Database } from "@/db/client";
import * as tlog from "@/lib/tlog/storage";
import { verifiedNote } from "./identity";
import type { LogDescriptor } from "./descriptor";
import { logStorage } from "./storage";

/** A log's proofs and tiles: lib/tlog over its storage. */

/** The inclusion proof of row `seq` in the tree of `size` (default the latest), with that size's checkpoint when held. */
export async function inclusionProof(
  log: LogDescriptor,
  db: Database,
  seq: number,
  size?: number,
): Promise<{ seq: number; leaf_index: number; tree_size: number; proof: string[]; checkpoint: string | null }> {
  const proof = await tlog.inclusionProof(logStorage(log, db), seq, size);
  // A held note is given only when it verifies against the published identity (a note from before
  // the identity was recorded, signed under another origin or key, is left out: null).
  const checkpoint = proof.checkpoint && (await verifiedNote(log, db, proof.checkpoint, new Date(), { record: false })) ? proof.checkpoint : null;
  return { ...proof, checkpoint };
}

export const consistencyProof = (log: LogDescriptor, db: Database, from: number, to: number) => tlog.consistencyProof(logStorage(log, db), from, to);
export const readTile = (log: LogDescriptor, db: Database, level: number, index: number, width: number) =>
  tlog.hashTile(logStorage(log, db), level, index, width);
export const readEntryBundle = (log: LogDescriptor, db: Database, index: number, width: number) => tlog.entryBundle(logStorage(log, db), index, width);
