import { logTables } from "./log-tables";

/**
 * The residency log's tables (migrations 0000, 0008, 0017, 0023, 0029): its rows, its Merkle tree's
 * nodes, signed checkpoints, witness cosignatures, head, recorded identity and verified head.
 */
export const residencyLogTables = logTables({
  rows: "residency_log",
  nodes: "log_nodes",
  checkpoints: "log_checkpoints",
  cosignatures: "log_cosignatures",
  head: "log_head",
  identity: "log_identity",
  verifiedHead: "log_verified_head",
  pending: "log_pending",
});

export const {
  rows: residencyLog,
  nodes: logNodes,
  checkpoints: logCheckpoints,
  cosignatures: logCosignatures,
  head: logHead,
  identity: logIdentity,
  verifiedHead: logVerifiedHead,
} = residencyLogTables;
