import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "@/db/client";
import { recoveryCodes } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { hashCredential, isCredential, mintCredential, replaceSecret } from "./credentials";
import { consumeNonce } from "@/lib/city/challenge";
import { verifyEd25519 } from "./keys";
import { PROTOCOLS } from "@/lib/city/protocols";
import type { LogReceipt } from "@/lib/tlog/append";
import { appendIdentityLog } from "@/lib/city/logs/identity-log";
import { countKeyEvent } from "./key-authority";
import { citizenKeys, uncommittedProblem } from "./pre-rotation";
import { type Opened, openRecovery } from "./public-recovery";
import { jwkThumbprint } from "./request-keys";

export const RECOVERY_CODES_PER_MINT = 8;

/** CITY-RECOVER/1: eight single-use codes, shown once; a new mint voids every unused code of the old set. */
export async function mintRecoveryCodes(db: Database, did: string, now: Date): Promise<string[]> {
  await db
    .update(recoveryCodes)
    .set({ voidedAt: now })
    .where(and(eq(recoveryCodes.did, did), isNull(recoveryCodes.usedAt), isNull(recoveryCodes.voidedAt)));
  const codes = Array.from({ length: RECOVERY_CODES_PER_MINT }, () => mintCredential("recovery"));
  await db.insert(recoveryCodes).values(codes.map((code) => ({ did, codeHash: hashCredential(code), createdAt: now })));
  return codes;
}

const NOT_VALID = "That recovery proof is not valid: the code is unknown, spent or voided, or the signature does not verify.";

/** A recovery's outcome: a new secret at once (no delay), or a recovery opened in public (a delay is set). */
export type Recovered = { secret: string; receipt: LogReceipt } | { opened: Opened };

/**
 * Redeems one code, atomically: of any number of parallel redemptions exactly one spends it. With
 * no delay the secret is replaced at once (CITY-RECOVER/1 as it always was); with one, the spent
 * code opens a recovery instead (lib/city/keys/public-recovery.ts).
 */
export async function redeemCode(db: Database, did: string, code: string, now: Date): Promise<Recovered> {
  if (!isCredential(code, "recovery")) throw new CityError("unauthorized", NOT_VALID);
  const live = and(eq(recoveryCodes.did, did), eq(recoveryCodes.codeHash, hashCredential(code)), isNull(recoveryCodes.usedAt), isNull(recoveryCodes.voidedAt));
  // Proven first with no lock, then the citizen's row, then its code: the lock order of every key
  // event (a mint holds the row, then voids the codes), so a redemption and a mint landing
  // together never deadlock. The guarded UPDATE decides which of parallel redemptions spends it.
  const [known] = await db.select({ id: recoveryCodes.id }).from(recoveryCodes).where(live);
  if (!known) throw new CityError("unauthorized", NOT_VALID);
  const citizen = await citizenKeys(db, did, { lock: true });
  if (!citizen) throw new CityError("unauthorized", NOT_VALID);
  const spent = await db.update(recoveryCodes).set({ usedAt: now }).where(live).returning({ id: recoveryCodes.id });
  if (spent.length !== 1) throw new CityError("unauthorized", NOT_VALID);
  await countKeyEvent(db, did, "code", now);
  if (citizen.delay > 0) return { opened: await openRecovery(db, { did, via: "code", nextPublicKey: null, delayHours: citizen.delay }, now) };
  return replaced(db, did, now, "code");
}

/**
 * What a committed next key signs to open a recovery: CITY-KEYS/1's own prefix and purpose, the DID,
 * the key's thumbprint and a fresh gate nonce (never a rotation's text, nor a gate's or CITY-RECOVER/1's).
 */
export function nextKeyRecoveryMessage(did: string, thumbprint: string, nonce: string): string {
  return `${PROTOCOLS.keys}|recover|${did}|${thumbprint}|${nonce}`;
}

/**
 * A committed next key opens a recovery (only with a delay set: without one it rotates at once by
 * POST /api/keys/rotate). The nonce is spent either way; the row is locked once the signature holds.
 */
export async function openWithNextKey(db: Database, did: string, nonce: string, publicKey: string, signature: string, now: Date): Promise<Recovered> {
  const fresh = await consumeNonce(db, nonce, now);
  const valid = fresh && (await verifyEd25519(publicKey, signature, nextKeyRecoveryMessage(did, jwkThumbprint(publicKey), nonce)));
  if (!valid) throw new CityError("unauthorized", NOT_VALID, { keepWrites: true });
  const citizen = await citizenKeys(db, did, { lock: true });
  if (!citizen) throw new CityError("unauthorized", NOT_VALID, { keepWrites: true });
  if (!citizen.hashes || uncommittedProblem(citizen.hashes, publicKey) !== null) {
    throw new CityError("forbidden", "That key is not among this citizen's committed next keys. Nothing but the nonce was spent.", { keepWrites: true });
  }
  if (citizen.delay === 0) {
    throw new CityError(
      "conflict",
      "This citizen set no recovery delay: a committed next key rotates at once (POST /api/keys/rotate), then recovers as the controller.",
      {
        keepWrites: true,
      },
    );
  }
  await countKeyEvent(db, did, "next-key", now);
  return { opened: await openRecovery(db, { did, via: "next-key", nextPublicKey: publicKey, delayHours: citizen.delay }, now) };
}

/**
 * What a controller signs to recover: a message of its own (protocol, purpose, DID, nonce), so that
 * a signature seen at the gate, which signs the bare nonce, is never a recovery.
 */
export function recoveryMessage(did: string, nonce: string): string {
  return `${PROTOCOLS.recover}|recover|${did}|${nonce}`;
}

/**
 * Recovers with the bound controller key's signature over recoveryMessage (the nonce is spent
 * either way). A new secret takes the old secret's place, so where a recovery delay stands it
 * waits it out like any recovery (the key outranks the secret, a committed next key outranks the
 * key and cancels it by rotating); with none, a new secret at once, and the codes minted under the
 * old secret are void.
 */
export async function recoverWithController(db: Database, did: string, nonce: string, signature: string, now: Date): Promise<Recovered> {
  const fresh = await consumeNonce(db, nonce, now);
  const unlocked = await citizenKeys(db, did, { lock: false });
  const valid = fresh && unlocked?.key ? await verifyEd25519(unlocked.key, signature, recoveryMessage(did, nonce)) : false;
  // The nonce stays spent even when the proof fails.
  if (!valid) throw new CityError("unauthorized", NOT_VALID, { keepWrites: true });
  // Proven: the row is locked, and the key checked again as read under the lock.
  const citizen = await citizenKeys(db, did, { lock: true });
  if (!citizen || citizen.key !== unlocked!.key) throw new CityError("unauthorized", NOT_VALID, { keepWrites: true });
  await countKeyEvent(db, did, "controller", now);
  if (citizen.delay > 0) return { opened: await openRecovery(db, { did, via: "controller", nextPublicKey: null, delayHours: citizen.delay }, now) };
  await db
    .update(recoveryCodes)
    .set({ voidedAt: now })
    .where(and(eq(recoveryCodes.did, did), isNull(recoveryCodes.usedAt), isNull(recoveryCodes.voidedAt)));
  return replaced(db, did, now, "controller");
}

async function replaced(db: Database, did: string, now: Date, via: "code" | "controller"): Promise<Recovered> {
  const secret = await replaceSecret(db, did, now);
  const { logReceipt } = await appendIdentityLog(db, { event: "secret-reset", did, at: now, details: { via } });
  return { secret, receipt: logReceipt };
}
