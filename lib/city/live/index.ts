// The face of this capability, written by scripts/house-move.ts
// (lib/city/live/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { comeBack, encodePollCursor, leave, type Poll, pollStatement, pollWhileBound, type Schedule, type ScheduleRequest } from "./live";
export { deltaLaterals, returnDelta, returnDeltaColumns, returnDeltaQuery } from "./live-delta";
