// The face of this capability, written by scripts/house-move.ts
// (lib/city/gate/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { NONCE_BINDING, presentAtGate, returnWithoutProof } from "./gate";
export { hostShare, prefixShare, sponsorNetworkShare, sponsorShare } from "./gate-flood";
