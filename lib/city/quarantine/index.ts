// The face of this capability, written by scripts/house-move.ts
// (lib/city/quarantine/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { isParked, listQuarantine, type Parked, PARKED_WINDOW_SECONDS, parkedCap, writeOrPark } from "./quarantine";
