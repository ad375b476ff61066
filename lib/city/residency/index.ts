// The face of this capability, written by scripts/house-move.ts
// (lib/city/residency/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { exportCitizen } from "./export";
export { acceptContract, residencyStatusOf, returnCitizen } from "./residency";
