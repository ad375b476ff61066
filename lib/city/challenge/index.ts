// The face of this capability, written by scripts/house-move.ts
// (lib/city/challenge/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { addressRate, consumeNonce, type IssuedNonce, issueNonce, type OfferedNonce, offerNonce, pollNonce, quotaRefusal, spendNonceCtes } from "./gate-nonces";
export {
  anonymousReach,
  bidOf,
  bidStep,
  bidStepSeconds,
  ceilingPressure,
  ceilingWindow,
  effortFromStripes,
  gatePowShares,
  networkStepShare,
  powBlock,
  powHeaders,
  readCeilingStripes,
  stepEffort,
} from "./gate-pow";
export { shareOf, sourceOf, sourcesToFill } from "./gate-prefixes";
export {
  ASKS,
  filtered,
  GATE_HOST_SHARE_PERCENT,
  GATE_PREFIX_SHARE_PERCENT,
  GATE_RESERVE_PERCENT,
  GATE_SUBJECTS_MAX,
  type GateCircumstances,
  type GateLimits,
  KINDS,
  lookReceipt,
  type Presentation,
  type RetryAdvice,
  sendsController,
  type Verdict,
} from "./gate-presentation";
export { POW_EFFORT_HEADER, POW_PROTOCOL, POW_SOLUTION_FORMAT, solutionEffort, solvePow } from "./pow";
export { POW_MAX_EFFORT } from "./pow-effort";
