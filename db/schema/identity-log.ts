import { logTables } from "./log-tables";

/**
 * The identity log (CITY-KEYS/1, docs/keys.md): every change to a citizen's keys, a second
 * transparency log in the residency log's formats (its own origin, the same city key). Migration 0032.
 */
export const IDENTITY_EVENTS = [
  "key-bound",
  "key-rotated",
  "next-keys-committed",
  "secret-reset",
  "recovery-opened",
  "recovery-held",
  "recovery-cancelled",
  "recovery-completed",
  "delay-set",
  // CITY-ORIGIN/1: who spoke for a domain, and when it stopped.
  "origin-proven",
  "origin-dropped",
] as const;
export type IdentityEvent = (typeof IDENTITY_EVENTS)[number];

export const identityLogTables = logTables({
  rows: "identity_log",
  nodes: "identity_log_nodes",
  checkpoints: "identity_log_checkpoints",
  cosignatures: "identity_log_cosignatures",
  head: "identity_log_head",
  identity: "identity_log_identity",
  verifiedHead: "identity_log_verified_head",
  pending: "identity_log_pending",
});

export const { rows: identityLog } = identityLogTables;
