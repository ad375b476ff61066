// The face of this capability, written by scripts/house-move.ts
// (lib/city/origin/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { DNS_TIMEOUT_MS } from "./dns";
export { FETCH_MAX_BYTES, FETCH_TIMEOUT_MS } from "./guarded-fetch";
export { ORIGIN_PROOF_SECONDS, originProofOf, proofStands } from "./proof-row";
export { dropOrigin, insecureOriginProofs, ORIGIN_TRIES, originSourceShare, verifyOrigin } from "./proofs";
