import { hexToBytes } from "@noble/hashes/utils.js";
import { eq, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens } from "@/db/schema";
import { CityError } from "@/lib/errors";
import type { LogReceipt } from "@/lib/tlog/append";
import { sha256Hex } from "@/lib/city/canonical";
import { consumeNonce } from "@/lib/city/challenge";
import { appendIdentityLog } from "@/lib/city/logs/identity-log";
import { cancelOpenSteps, countKeyEvent } from "./key-authority";
import { verifyEd25519 } from "./keys";
import { PROTOCOLS } from "@/lib/city/protocols";
import { jwkThumbprint } from "./request-keys";

/**
 * Pre-rotation (CITY-KEYS/1, after did:webvh): a citizen commits the hashes of its next keys; from
 * then on its controller moves only to a committed key, whoever asks (the gate's rotation, the
 * rotation door, a recovery), and the committed key alone may make that move.
 */

export const NEXT_KEYS_MAX = 3;

/** A committed next key's hash: the lowercase hex SHA-256 of its 32 raw Ed25519 bytes. */
export function nextKeyHash(publicKeyHex: string): string {
  return sha256Hex(hexToBytes(publicKeyHex));
}

/** A key's thumbprint as rotation messages and identity log rows name it; "none" for no key. */
export function thumbprintOrNone(publicKeyHex: string | null): string {
  return publicKeyHex ? jwkThumbprint(publicKeyHex) : "none";
}

/**
 * What the new key signs to rotate: its own protocol prefix and purpose, the DID, the old and new
 * thumbprints and a fresh gate nonce. No other signature of the city (the gate's bare nonce, a
 * CITY-RECOVER/1 message, an RFC 9421 signature base, which starts with a quoted component) is ever
 * this text.
 */
export function rotationMessage(did: string, fromThumbprint: string, toThumbprint: string, nonce: string): string {
  return `${PROTOCOLS.keys}|rotate|${did}|${fromThumbprint}|${toThumbprint}|${nonce}`;
}

/** Why a move to `publicKeyHex` is refused under the commitment that stands, or null when it may go. */
export function uncommittedProblem(nextKeyHashes: readonly string[] | null, publicKeyHex: string): string | null {
  if (!nextKeyHashes) return null;
  if (nextKeyHashes.includes(nextKeyHash(publicKeyHex))) return null;
  return "pre-rotation stands for this citizen: its controller can move only to a key whose SHA-256 it committed in next_key_hashes";
}

/** The commitment left after a move to a committed key by a path that commits none (the gate): the other hashes, or none. */
export function commitmentAfterMove(nextKeyHashes: readonly string[] | null, publicKeyHex: string): string[] | null {
  if (!nextKeyHashes) return null;
  const left = nextKeyHashes.filter((h) => h !== nextKeyHash(publicKeyHex));
  return left.length ? left : null;
}

/** An empty list turns pre-rotation off; a repeated hash is a mistake, refused. */
function commitmentOf(hashes: readonly string[]): string[] | null {
  if (new Set(hashes).size !== hashes.length) throw new CityError("bad_request", "next_key_hashes holds the same hash twice.");
  return hashes.length ? [...hashes] : null;
}

/** The identity log's public facts of a commitment. */
function commitmentDetails(hashes: string[] | null) {
  return { next_key_hashes: hashes ? hashes.join(",") : null, count: hashes?.length ?? 0 };
}

/**
 * Commits the next keys of a proven caller (its secret or controller key) whose row its door holds
 * locked, where no commitment stands. Once one stands only a committed key changes or withdraws it,
 * by a rotation: the secret and the current key are refused (403), so a thief holding either
 * cannot put its own key in the owner's place.
 */
export async function commitNextKeys(
  db: Database,
  did: string,
  hashes: readonly string[],
  by: "secret" | "controller",
  now: Date,
): Promise<{ committed: string[] | null; receipt: LogReceipt }> {
  const committed = commitmentOf(hashes);
  const citizen = await citizenKeys(db, did, { lock: true });
  if (!citizen) throw new CityError("not_found", "No citizen of the city has that DID.");
  if (citizen.hashes) {
    throw new CityError(
      "forbidden",
      "A commitment of next keys stands: only a committed key changes or withdraws it, by rotating to itself (POST /api/keys/rotate, which commits the next hashes; an empty list turns pre-rotation off). Neither the secret nor the current key can. Nothing was changed.",
    );
  }
  await countKeyEvent(db, did, by, now);
  await db.update(citizens).set({ nextKeyHashes: committed }).where(eq(citizens.did, did));
  const { logReceipt } = await appendIdentityLog(db, { event: "next-keys-committed", did, at: now, details: commitmentDetails(committed) });
  return { committed, receipt: logReceipt };
}

/** A live citizen's controller key, committed next keys and recovery delay. */
export interface CitizenKeys {
  key: string | null;
  hashes: string[] | null;
  delay: number;
}

/**
 * A live citizen's keys, or null when unknown or exported. With `lock`, its row is held (FOR NO KEY
 * UPDATE) until the transaction ends: every path that moves a key or opens a recovery reads them so,
 * once its proof holds.
 */
export async function citizenKeys(db: Database, did: string, { lock }: { lock: boolean }): Promise<CitizenKeys | null> {
  const [row] = rowsOf<{ delay: number; key: string | null; hashes: string[] | null }>(
    await db.execute(sql`SELECT recovery_delay_hours AS delay, controller_public_key AS key, next_key_hashes AS hashes
      FROM ${citizens} WHERE did = ${did} AND residency_status <> 'exported' ${lock ? sql`FOR NO KEY UPDATE` : sql``}`),
  );
  return row ? { delay: Number(row.delay), key: row.key, hashes: row.hashes } : null;
}

export interface Rotation {
  did: string;
  nonce: string;
  publicKey: string;
  signature: string;
  nextKeyHashes: readonly string[];
}

const NOT_VALID = "That rotation is not valid: the nonce is unknown, spent or expired, or the signature does not verify over the rotation message.";

/**
 * Rotates to a committed key, proven by that key's signature over rotationMessage alone: neither
 * the old key nor the secret is asked. The nonce is spent whatever follows; the citizen's row is
 * locked only once the proof holds, and the proof is checked again on the row as read under it.
 */
export async function rotateToCommitted(
  db: Database,
  r: Rotation,
  now: Date,
): Promise<{ from: string; to: string; committed: string[] | null; receipt: LogReceipt }> {
  const committed = commitmentOf(r.nextKeyHashes);
  const fresh = await consumeNonce(db, r.nonce, now);
  if (!fresh) throw new CityError("unauthorized", NOT_VALID, { keepWrites: true });
  const prove = async (row: CitizenKeys | null) => {
    if (!row) throw new CityError("not_found", "No citizen of the city has that DID.", { keepWrites: true });
    if (!row.hashes) {
      throw new CityError("forbidden", "No pre-rotation commitment stands for this citizen: commit next_key_hashes first (POST /api/keys/commit).", {
        keepWrites: true,
      });
    }
    const problem = uncommittedProblem(row.hashes, r.publicKey);
    if (problem) throw new CityError("forbidden", `${problem}. Nothing was changed.`, { keepWrites: true });
    const message = rotationMessage(r.did, thumbprintOrNone(row.key), jwkThumbprint(r.publicKey), r.nonce);
    if (!(await verifyEd25519(r.publicKey, r.signature, message))) throw new CityError("unauthorized", NOT_VALID, { keepWrites: true });
    return row;
  };
  await prove(await citizenKeys(db, r.did, { lock: false }));
  const held = await prove(await citizenKeys(db, r.did, { lock: true }));
  if (!committed && held.delay > 0) {
    throw new CityError(
      "conflict",
      `Withdrawing pre-rotation (an empty next_key_hashes) weakens this citizen's protections, so it waits out the recovery delay: lower the delay to 0 first (POST /api/keys/delay; it takes effect after the ${held.delay} hours standing), or commit at least one next key. Only the nonce was spent.`,
      { keepWrites: true },
    );
  }
  await countKeyEvent(db, r.did, "next-key", now);
  await db.update(citizens).set({ controllerPublicKey: r.publicKey, nextKeyHashes: committed }).where(eq(citizens.did, r.did));
  // The committed key outranks every credential: whatever step waits (a recovery, a lowered delay)
  // is cancelled, its rows before the rotation's (the step's row before the identity log's head).
  await cancelOpenSteps(db, r.did, now, "rotated");
  const from = thumbprintOrNone(held.key);
  const to = jwkThumbprint(r.publicKey);
  const { logReceipt } = await appendIdentityLog(db, {
    event: "key-rotated",
    did: r.did,
    at: now,
    details: { via: "pre-rotation", from, to, public_key: r.publicKey, ...commitmentDetails(committed) },
  });
  return { from, to, committed, receipt: logReceipt };
}
