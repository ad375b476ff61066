// The face of this capability, written by scripts/house-move.ts
// (lib/city/bounds/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { type Chain, chainOutcome, type ChainOutcome, chainSql, OVERFLOW_BUCKETS, OVERFLOW_FACTOR, settle, takeChain, undoTakes } from "./gate-windows";
export { emissionMs, gcraFitsSql, gcraNextSql, type GcraRate, gcraRetryAfterSeconds, gcraTerms } from "./gcra";
export { holdLock } from "./locks";
export { isNewcomer, NEWCOMER_SECONDS, newcomerAt, settledAt } from "./newcomers";
export { requireSlot, requireSlotIn, requireTaken, slotColumns, slotCtes, slotOf, slotRefusal, sweepWindowsSql, takeSlot, takeWindowSql } from "./rate";
export { type Bucketed, bucketMs, bucketOf, countsOf, RATE_BUCKETS, type Slot, type Window } from "./rate-buckets";
export { cityWindow, RATE_STRIPES, STEP_CYCLE, stepPortion, stripesRetryAfter, stripesRoom, stripesRoomSql, withReach, withSteps } from "./rate-stripes";
export {
  type Charge,
  chargeSql,
  chargeStore,
  cityFull,
  jsonbRowBytes,
  newcomerSql,
  refusalIfFull,
  releaseSql,
  rowBytes,
  STORE_ROW_BYTES,
  STORE_STRIPES,
  storeBound,
  storeGauges,
  storeLimits,
  type StoreName,
} from "./store-bounds";
export { citizenShare, citizenSubject, storeShares, type StoreShares, visitorShare, visitorSubject } from "./store-shares";
