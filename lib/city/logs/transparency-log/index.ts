/**
 * A transparency log kept in PostgreSQL (docs/log.md): a hash chain of rows and the RFC 9162
 * tree over them (lib/tlog), signed checkpoints, proofs, tiles and witnesses. The same code serves
 * every log the city keeps; a LogDescriptor names one (its tables, origin, receipt field), and
 * bindLog gives that log's face (lib/city/logs/residency-log, lib/city/logs/identity-log). Its files:
 *   descriptor.ts   what a log is to this module
 *   row.ts          the row format: published row, chained hash, leaf data
 *   head.ts         the head and its lock (only the integrator takes it)
 *   append.ts       an append in the write's transaction: its entry recorded pending, in one INSERT
 *   integrate.ts    batched integration after the commit: rows, tree nodes and ONE signed checkpoint per batch
 *   receipts.ts     an append's ticket, carried up to the door, and its receipt once integrated
 *   checkpoints.ts  the latest checkpoint with its cosignatures
 *   catch-up.ts     the tree's catch-up over rows from before it
 *   storage.ts      the tree's tables as lib/tlog's LogStorage
 *   proofs.ts       inclusion and consistency proofs, tiles and entry bundles
 *   signer.ts       the key and origin that sign checkpoints
 *   identity.ts     the log's recorded identity, checked before any append
 *   witnesses.ts    cosignatures gathered from the configured witnesses
 *   chain.ts        published pages and the hash chain's check
 */
import { appended, appendLog, prepareAppend } from "./append";
import { readCitizenRows, readLatestRows, readLogPage, verifyHashChain } from "./chain";
import { catchUpTree } from "./catch-up";
import { catchUpLogTree, currentCheckpoint, latestCheckpoint } from "./checkpoints";
import type { LogDescriptor } from "./descriptor";
import type { Database } from "@/db/client";
import type { PublishedLogRow } from "./row";
import { lockLogHead } from "./head";
import { awaitIntegration, integratedReceipt, integratePending } from "./integrate";
import { announceLogIdentity, checkLogIdentity, logIdentityReport, publishedLogIdentity, verifiedNote } from "./identity";
import { consistencyProof, inclusionProof, readEntryBundle, readTile } from "./proofs";
import { logSigner } from "./signer";
import { syncWitnesses, witnessStates } from "./witnesses";

export type { LogReceipt } from "@/lib/tlog/append";
export type { Appended, PreparedAppend } from "./append";
export type { ChainReport } from "./chain";
export { cosignedNote, type HeldCheckpoint } from "./checkpoints";
export type { LogDescriptor } from "./descriptor";
export type { LogHead } from "./head";
export { INTEGRATION_BATCH_MAX, INTEGRATION_POLL_MS, INTEGRATION_RETRY_POLLS, INTEGRATION_WAIT_MS } from "./integrate";
export { forgetLogIdentity, type IdentityCheck, type IdentityReport, type LogIdentity, noteVerifies } from "./identity";
export { LogReceiptSchema, type LogReceipts, type LogTicket, settleLogReceipts, withLogAppends, withLogReceipts } from "./receipts";
export { GENESIS_HASH, leafDataOf, type PublishedLogRow, publishLogRow } from "./row";
export { type LogSigner, originAtBaseHost } from "./signer";
export { configuredWitnesses } from "./witnesses";

/** A function of a log, with the log given. */
function bound<A extends unknown[], R>(log: LogDescriptor, f: (log: LogDescriptor, ...args: A) => R): (...args: A) => R {
  return (...args) => f(log, ...args);
}

/** A row to append to a log whose events are E. */
type Entry<E extends string> = { event: E; did: string; at: Date; details?: Record<string, string | number | boolean | null> };

/**
 * One log's face: every function of this module that takes a log, with that log given. Its rows'
 * events are typed as the log's own (the appends take only those; the rows read are those).
 */
export function bindLog<E extends string>(log: LogDescriptor<E>) {
  return {
    log,
    appendLog: (db: Database, entry: Entry<E>) => appendLog(log, db, entry),
    prepareAppend: (db: Database, entry: Entry<E> & Parameters<typeof prepareAppend>[2]) => prepareAppend(log, db, entry),
    appended: bound(log, appended),
    /** Appends one entry in a transaction of its own and waits for its receipt (scripts, tests, the import). */
    appendNow: async (db: Database, entry: Entry<E>) => {
      const { ticket } = await db.transaction((tx) => appendLog(log, tx as Database, entry));
      return { ticket, logReceipt: await awaitIntegration(log, db, ticket) };
    },
    integratePending: bound(log, integratePending),
    awaitIntegration: bound(log, awaitIntegration),
    integratedReceipt: bound(log, integratedReceipt),
    // Its rows were appended by this face, so their events are the log's own.
    readLogPage: (db: Database, after: number, limit: number) =>
      readLogPage(log, db, after, limit) as Promise<{ rows: PublishedLogRow<E>[]; nextAfter: number | null }>,
    readLatestRows: (db: Database, limit: number) => readLatestRows(log, db, limit) as Promise<PublishedLogRow<E>[]>,
    readCitizenRows: (db: Database, did: string, limit: number) => readCitizenRows(log, db, did, limit) as Promise<PublishedLogRow<E>[]>,
    verifyHashChain: bound(log, verifyHashChain),
    catchUpLogTree: bound(log, catchUpLogTree),
    catchUpTree: bound(log, catchUpTree),
    currentCheckpoint: bound(log, currentCheckpoint),
    latestCheckpoint: bound(log, latestCheckpoint),
    lockLogHead: bound(log, lockLogHead),
    announceLogIdentity: bound(log, announceLogIdentity),
    checkLogIdentity: bound(log, checkLogIdentity),
    logIdentityReport: bound(log, logIdentityReport),
    publishedLogIdentity: bound(log, publishedLogIdentity),
    verifiedNote: bound(log, verifiedNote),
    inclusionProof: bound(log, inclusionProof),
    consistencyProof: bound(log, consistencyProof),
    readTile: bound(log, readTile),
    readEntryBundle: bound(log, readEntryBundle),
    logSigner: bound(log, logSigner),
    syncWitnesses: bound(log, syncWitnesses),
    witnessStates: bound(log, witnessStates),
  };
}

/** A log's face (bindLog). */
export type BoundLog<E extends string = string> = ReturnType<typeof bindLog<E>>;
