/**
 * The identity log (CITY-KEYS/1, docs/keys.md): every change to a citizen's keys (a
 * controller bound or rotated, next keys committed, a secret reset, a recovery opened, held,
 * cancelled or completed, a recovery delay set), as a transparency log in the residency log's
 * formats under its own origin, signed by the same city key. This is its one face: the
 * transparency log module (lib/city/logs/transparency-log) bound to its tables and origin (./log.ts).
 */
import type { Database } from "@/db/client";
import type { IdentityEvent } from "@/db/schema";
import type { Appended } from "@/lib/city/logs/transparency-log";
import { identityLog } from "./log";

export { IDENTITY_EVENTS, type IdentityEvent } from "@/db/schema";
export type { Appended, LogReceipt, PublishedLogRow } from "@/lib/city/logs/transparency-log";
export { importEarlierKeyFacts } from "./import";
export { IDENTITY_LOG, identityLog } from "./log";

/** What an identity log row may say besides its event, DID and time: public facts only. */
export type IdentityDetails = Record<string, string | number | boolean | null>;

/**
 * Appends one key event to the identity log, in the caller's transaction (the one that makes the
 * change it records): its entry recorded pending, integrated after the commit with the other
 * pending ones (lib/city/logs/transparency-log/integrate.ts); the receipt goes to the door's answer as
 * `identity_log_receipt` once integrated (invokeDoor). No lock of the log is taken here. `details`
 * hold only public facts (RFC 7638 thumbprints, public keys hex, hashes, opens_after, reason codes),
 * never a secret, a code or a signature.
 */
export async function appendIdentityLog(db: Database, entry: { event: IdentityEvent; did: string; at: Date; details?: IdentityDetails }): Promise<Appended> {
  return identityLog.appendLog(db, entry);
}
