import { bytesToHex, randomBytes } from "@noble/hashes/utils.js";
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, proveChallenges, tierEvents } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { didKeyOf, verifyEd25519 } from "./keys";
import { PROTOCOLS } from "@/lib/city/protocols";
import { holdTierLock, restrictedRefusal } from "@/lib/city/restriction";

export const CHALLENGE_TTL_SECONDS = 600;

export function proofMessage(did: string, challenge: string): string {
  return `${PROTOCOLS.prove}|${did}|${challenge}`;
}

/** A single-use CITY-PROVE/1 challenge for this citizen, valid for 600 seconds. */
export async function issueChallenge(db: Database, did: string, now: Date): Promise<{ challenge: string; expiresAt: Date }> {
  const challenge = bytesToHex(randomBytes(16));
  const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_SECONDS * 1000);
  // Expired challenges are swept at every issue, so the table holds only the last 600 seconds:
  // by the same statement as the insert (a data-modifying CTE), one round trip.
  const swept = db.$with("swept").as(db.delete(proveChallenges).where(lt(proveChallenges.expiresAt, now)).returning({ challenge: proveChallenges.challenge }));
  await db.with(swept).insert(proveChallenges).values({ challenge, did, expiresAt });
  return { challenge, expiresAt };
}

/**
 * Verifies a proof of possession of an Ed25519 key. The challenge is spent by any attempt, valid
 * or not, so a proof can never be replayed; a valid proof raises the tier to proven and publishes
 * the key's did:key.
 */
export async function proveKey(
  db: Database,
  did: string,
  proof: { public_key: string; signature: string; challenge: string },
  now: Date,
): Promise<{ provenDid: string }> {
  const spent = await db
    .update(proveChallenges)
    .set({ usedAt: now })
    .where(
      and(eq(proveChallenges.challenge, proof.challenge), eq(proveChallenges.did, did), isNull(proveChallenges.usedAt), gt(proveChallenges.expiresAt, now)),
    )
    .returning({ challenge: proveChallenges.challenge });
  if (spent.length !== 1) {
    throw new CityError("proof_invalid", "That challenge is unknown, not yours, expired or already used: GET /api/prove for a fresh one.");
  }
  if (!(await verifyEd25519(proof.public_key, proof.signature, proofMessage(did, proof.challenge)))) {
    throw new CityError(
      "proof_invalid",
      `The signature does not verify (strict Ed25519 over the UTF-8 of "${PROTOCOLS.prove}|<did>|<challenge>"). The challenge is spent.`,
      {
        keepWrites: true,
      },
    );
  }
  const provenDid = didKeyOf(proof.public_key);
  // A tier change under the tier lock: a proof never lifts a restriction (only a granted appeal does).
  await holdTierLock(db, did);
  const [before] = await db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, did)).for("no key update");
  if (!before) throw new CityError("not_found", "No such citizen.");
  if (before.tier === "restricted") throw restrictedRefusal();
  await db.update(citizens).set({ tier: "proven", provenDid, provenMethod: "ed25519" }).where(eq(citizens.did, did));
  await db
    .insert(tierEvents)
    .values({ did, event: "prove", fromTier: before.tier, toTier: "proven", reason: `${PROTOCOLS.prove} proof of ${provenDid}`, at: now });
  return { provenDid };
}
