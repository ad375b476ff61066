/**
 * A transparency log kept in PostgreSQL (docs/log.md): a hash chain of rows and the RFC 9162
 * tree over them (lib/tlog), signed checkpoints, proofs, tiles and witnesses. The same code serves
 * every log the city keeps; a LogDescriptor names one (its tables, origin, receipt field), and
 * bindLog gives that log's face (lib/city/residency-log, lib/city/identity-log). Its files:
 *   descriptor.ts   what a log is to this module
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
 */
import { appended, appendLog, prepareAppend } from "./append";
import { readCitizenRows, readLatestRows, readLogPage, verifyHashChain } from "./chain";
import { catchUpLogTree, catchUpTree, currentCheckpoint, latestCheckpoint } from "./checkpoints";
import type { LogDescriptor } from "./descriptor";
import type { Database } from "@/db/client";
import type { PublishedLogRow } from "./row";
import type { LogHead } from "./head";
import { lockHeadQuery, lockLogHead, lockLogHeadAfter, lockLogHeadIf, logHeadIn } from "./head";
import { announceLogIdentity, checkLogIdentity, logIdentityReport, publishedLogIdentity, verifiedNote } from "./identity";
import { consistencyProof, inclusionProof, readEntryBundle, readTile } from "./proofs";
import { recordLogReceipt } from "./receipts";
import { logSigner } from "./signer";
import { syncWitnesses, witnessStates } from "./witnesses";

export type { LogReceipt } from "@/lib/tlog/append";
export type { Appended, PreparedAppend } from "./append";
export type { ChainReport } from "./chain";
export { cosignedNote, type HeldCheckpoint } from "./checkpoints";
export type { LogDescriptor } from "./descriptor";
export { type LogHead, type LogHeadRow, logHeadOf } from "./head";
export { forgetLogIdentity, type IdentityCheck, type IdentityReport, type LogIdentity, noteVerifies } from "./identity";
export { LogReceiptSchema, type LogReceipts, withLogReceipts } from "./receipts";
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
    appendLog: (db: Database, entry: Entry<E>, head?: LogHead) => appendLog(log, db, entry, head),
    prepareAppend: (db: Database, head: LogHead, entry: Entry<E> & Parameters<typeof prepareAppend>[3]) => prepareAppend(log, db, head, entry),
    appended: bound(log, appended),
    recordReceipt: bound(log, recordLogReceipt),
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
    lockHeadQuery: bound(log, lockHeadQuery),
    lockLogHead: bound(log, lockLogHead),
    lockLogHeadAfter: bound(log, lockLogHeadAfter),
    lockLogHeadIf: bound(log, lockLogHeadIf),
    logHeadIn: bound(log, logHeadIn),
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
