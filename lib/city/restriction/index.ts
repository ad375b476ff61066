// The face of this capability, written by scripts/house-move.ts
// (lib/city/restriction/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { decideAppeal, fileAppeal, listAppeals } from "./appeals";
export { holdTierLock, recordRefusal, restrictedRefusal, RESTRICTION_TRIGGER } from "./restriction";
