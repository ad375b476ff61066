// The face of this capability, written by scripts/house-move.ts
// (lib/city/shelves/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { appendCheckpoint, type CheckpointMeta, listCheckpoints, readCheckpoint } from "./checkpoints";
export { BAG_NAME, keepBag, listBags, LOCKER_BYTES_COUNTER, LOCKER_WRITES_PER_HOUR, readBag } from "./locker";
export { actOnLot, listLots, LOT_ACTIONS, LOT_COUNT, LOT_DOOR } from "./lots";
export { findSeal, sealMemory, SEALS_PER_HOUR } from "./seals";
export { guardShelfContent, isClean } from "./shelf-guard";
export { keepNote, listNotes, VAULT_DOOR, VAULT_NOTE_MAX_CHARS } from "./vault";
