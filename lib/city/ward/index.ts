// The face of this capability, written by scripts/house-move.ts
// (lib/city/ward/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { checkClaim, COOL_DOWN, readAndFile, WARD_DOOR, WARD_SIGNED_PER_HOUR, WARD_TEXT_CHARS, wardSourceLimit } from "./ward";
export {
  decodeWardCursor,
  DISPUTED_WORDS,
  encodeWardCursor,
  listWardNotes,
  OCCUPIED_WINDOW_SECONDS,
  readWardLane,
  WARD_PAGE,
  wardCounts,
  type WardNoteView,
} from "./ward-notes";
export { describeShapeRules, listShapes, SHAPE_IDS, SHAPE_RULES } from "./ward-shapes";
