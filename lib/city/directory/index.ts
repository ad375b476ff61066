// The face of this capability, written by scripts/house-move.ts
// (lib/city/directory/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { readCitizenProfile, RESIDENCY_ROWS } from "./citizen-profile";
export { assignBed, bedLabel, citizenKeyOf, citizenSelf, deriveDid, newSalt } from "./citizens";
export { type DirectoryFilters, listPeers, originLapsesAt, type PeerRow, presenceChangesAt, readPeerRow } from "./directory";
export { searchKey, searchPeers, searchTextProblem } from "./directory-search";
export { backfillNameKeys, NAME_FORM_TEXT, NAME_RULE, type NameKeyReport, normalKey } from "./names";
export { peerNames } from "./peer-names";
