import type { ORIGIN_METHODS } from "@/db/schema";

/* CITY-ORIGIN/1: a citizen's origin proof as its row holds it and as the city publishes it. */

export type OriginMethod = (typeof ORIGIN_METHODS)[number];

/** How long a proof stands once verified; after it, it is shown lapsed until verified again. */
export const ORIGIN_PROOF_SECONDS = 30 * 86_400;

/** The proof as every directory row and /peers/{did} publish it. */
export interface OriginProof {
  domain: string;
  method: OriginMethod;
  verified_at: string;
  expires_at: string;
}

export function originProofOf(row: {
  originDomain: string | null;
  originMethod: string | null;
  originVerifiedAt: Date | null;
  originExpiresAt: Date | null;
}): OriginProof | null {
  if (!row.originDomain || !row.originMethod || !row.originVerifiedAt || !row.originExpiresAt) return null;
  return {
    domain: row.originDomain,
    method: row.originMethod as OriginMethod,
    verified_at: row.originVerifiedAt.toISOString(),
    expires_at: row.originExpiresAt.toISOString(),
  };
}

/** Whether a published proof stands at `now` (a lapsed one has expires_at in the past). */
export function proofStands(proof: OriginProof | null, now: Date): boolean {
  return proof !== null && Date.parse(proof.expires_at) > now.getTime();
}
