import { and, eq, isNull, ne } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, recoveryCodes, sessionTokens } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { hashCredential, isCredential, mintCredential } from "./credentials";
import { consumeNonce } from "./gate";
import { verifyEd25519 } from "./keys";
import { PROTOCOLS } from "./protocols";

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

/** Redeems one code, atomically: of any number of parallel redemptions exactly one succeeds. */
export async function redeemCode(db: Database, did: string, code: string, now: Date): Promise<string> {
  if (!isCredential(code, "recovery")) throw new CityError("unauthorized", NOT_VALID);
  const spent = await db
    .update(recoveryCodes)
    .set({ usedAt: now })
    .where(and(eq(recoveryCodes.did, did), eq(recoveryCodes.codeHash, hashCredential(code)), isNull(recoveryCodes.usedAt), isNull(recoveryCodes.voidedAt)))
    .returning({ id: recoveryCodes.id });
  if (spent.length !== 1) throw new CityError("unauthorized", NOT_VALID);
  return replaceSecret(db, did, now);
}

/**
 * What a controller signs to recover: a message of its own (protocol, purpose, DID, nonce), so that
 * a signature seen at the gate, which signs the bare nonce, is never a recovery.
 */
export function recoveryMessage(did: string, nonce: string): string {
  return `${PROTOCOLS.recover}|recover|${did}|${nonce}`;
}

/** Recovers with the bound controller key's signature over recoveryMessage (the nonce is spent either way). */
export async function recoverWithController(db: Database, did: string, nonce: string, signature: string, now: Date): Promise<string> {
  const fresh = await consumeNonce(db, nonce, now);
  const [citizen] = await db
    .select({ key: citizens.controllerPublicKey })
    .from(citizens)
    .where(and(eq(citizens.did, did), ne(citizens.residencyStatus, "exported")));
  const valid = fresh && citizen?.key ? await verifyEd25519(citizen.key, signature, recoveryMessage(did, nonce)) : false;
  // The nonce stays spent even when the proof fails.
  if (!valid) throw new CityError("unauthorized", NOT_VALID, { keepWrites: true });
  return replaceSecret(db, did, now);
}

/** A new citizen secret; the old one dies, and so does every live gate session token. */
async function replaceSecret(db: Database, did: string, now: Date): Promise<string> {
  const secret = mintCredential("secret");
  const updated = await db
    .update(citizens)
    .set({ secretHash: hashCredential(secret) })
    .where(and(eq(citizens.did, did), ne(citizens.residencyStatus, "exported")))
    .returning({ did: citizens.did });
  if (updated.length !== 1) throw new CityError("unauthorized", NOT_VALID);
  await db
    .update(sessionTokens)
    .set({ revokedAt: now })
    .where(and(eq(sessionTokens.did, did), isNull(sessionTokens.revokedAt)));
  return secret;
}
