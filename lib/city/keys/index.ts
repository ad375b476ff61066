// The face of this capability, written by scripts/house-move.ts
// (lib/city/keys/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export {
  bearerToken,
  citizenForToken,
  type CitizenLock,
  CREDENTIAL_PREFIXES,
  hashCredential,
  heldCitizenForSignature,
  heldCitizenForToken,
  mintCredential,
  type Presented,
} from "./credentials";
export { authorityOf, cancelOpenSteps, IDENTITY_ROW_BYTES } from "./key-authority";
export { keyEverBound, readKeyHistory } from "./key-history";
export { verifyEd25519, verifyEd25519Bytes } from "./keys";
export { commitmentAfterMove, commitNextKeys, NEXT_KEYS_MAX, rotateToCommitted, uncommittedProblem } from "./pre-rotation";
export { CHALLENGE_TTL_SECONDS, issueChallenge, proofMessage, proveKey } from "./proof";
export {
  cancelRecovery,
  completeRecovery,
  HOLD_HOURS,
  HOLD_REASONS,
  holdRecovery,
  HOLDS_PER_RECOVERY,
  OWNER_HOLDS_PER_DAY,
  type PublicRecovery,
  readPublicRecovery,
  RECOVERY_DELAY_HOURS,
  RECOVERY_STEPS,
  RECOVERY_VIAS,
  setRecoveryDelay,
} from "./public-recovery";
export { mintRecoveryCodes, openWithNextKey, type Recovered, recoverWithController, RECOVERY_CODES_PER_MINT, redeemCode } from "./recovery";
export {
  jwkThumbprint,
  keyGone,
  publishedRequestKeys,
  recordHistoryNonce,
  recordNonce,
  type RequestKey,
  requestKeysFor,
  SIGNATURE_CLOCK_SKEW_SECONDS,
  SIGNATURE_MAX_AGE_SECONDS,
  SIGNATURE_MAX_SECONDS,
  type VerifiedSignature,
} from "./request-keys";
export { mintSessionToken, revokeAllSessionTokens, revokeSessionToken, TOKEN_TTL, TOKENS_PER_HOUR } from "./tokens";
