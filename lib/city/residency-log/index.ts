/**
 * The residency log: every admission, exit, return and export, as a hash chain and as a
 * transparency log (lib/tlog) kept in PostgreSQL. This is its one face; its files:
 *   row.ts          the row format: published row, chained hash, leaf data
 *   head.ts         the head and its lock (every appender takes it, alone or in a statement of its own)
 *   append.ts       an append under the head: the row, its tree nodes and a signed checkpoint in one INSERT
 *   receipts.ts     an append's receipt, carried up to the answer
 *   checkpoints.ts  the latest checkpoint with its cosignatures; the tree's catch-up over older rows
 *   storage.ts      the tree's tables as lib/tlog's LogStorage
 *   proofs.ts       inclusion and consistency proofs, tiles and entry bundles
 *   signer.ts       the key and origin that sign checkpoints
 *   identity.ts     the log's recorded identity, checked before any append
 *   witnesses.ts    cosignatures gathered from the configured witnesses
 *   chain.ts        published pages and the hash chain's check
 *   history.ts      the city over time, drawn from the log
 */
export type { LogReceipt } from "@/lib/tlog/append";
export { type Appended, appended, appendLog, type PreparedAppend, prepareAppend } from "./append";
export { type ChainReport, readLogPage, verifyHashChain } from "./chain";
export { catchUpLogTree, catchUpTree, cosignedNote, currentCheckpoint, type HeldCheckpoint, latestCheckpoint } from "./checkpoints";
export { LOCK_LOG_HEAD, lockLogHead, lockLogHeadAfter, lockLogHeadIf, type LogHead, logHeadOf } from "./head";
export { readLatestLogRows, readResidencyDays, type ResidencyDay } from "./history";
export {
  announceLogIdentity,
  checkLogIdentity,
  forgetLogIdentity,
  type IdentityReport,
  logIdentityReport,
  noteVerifies,
  publishedLogIdentity,
} from "./identity";
export { consistencyProof, inclusionProof, readEntryBundle, readTile } from "./proofs";
export { LogReceiptSchema, receiptField, recordLogReceipt, withLogReceipt } from "./receipts";
export { GENESIS_HASH, leafDataOf, type PublishedLogRow, publishLogRow } from "./row";
export { logSigner, type LogSigner } from "./signer";
export { configuredWitnesses, syncWitnesses, witnessStates } from "./witnesses";
