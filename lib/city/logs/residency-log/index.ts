/**
 * The residency log: every admission, exit, return and export, as a hash chain and as a
 * transparency log (lib/tlog) kept in PostgreSQL. This is its one face: the transparency log
 * module (lib/city/logs/transparency-log) bound to the residency log's tables and origin (./log.ts),
 * and the city over time drawn from it (./history.ts).
 */
import { residencyLog } from "./log";

export {
  type Appended,
  type ChainReport,
  configuredWitnesses,
  cosignedNote,
  forgetLogIdentity,
  GENESIS_HASH,
  type HeldCheckpoint,
  type IdentityReport,
  leafDataOf,
  INTEGRATION_BATCH_MAX,
  INTEGRATION_POLL_MS,
  INTEGRATION_RETRY_POLLS,
  INTEGRATION_WAIT_MS,
  type LogReceipt,
  LogReceiptSchema,
  type LogSigner,
  noteVerifies,
  type PreparedAppend,
  type PublishedLogRow,
  publishLogRow,
} from "@/lib/city/logs/transparency-log";
export { readResidencyDays, type ResidencyDay } from "./history";
export { RESIDENCY_LOG, residencyLog } from "./log";

export const {
  appendLog,
  prepareAppend,
  appended,
  appendNow,
  integratePending,
  integratedReceipt,
  awaitIntegration,
  readLogPage,
  readLatestRows: readLatestLogRows,
  verifyHashChain,
  catchUpLogTree,
  catchUpTree,
  currentCheckpoint,
  latestCheckpoint,
  announceLogIdentity,
  checkLogIdentity,
  logIdentityReport,
  publishedLogIdentity,
  inclusionProof,
  consistencyProof,
  readTile,
  readEntryBundle,
  logSigner,
  syncWitnesses,
  witnessStates,
} = residencyLog;
