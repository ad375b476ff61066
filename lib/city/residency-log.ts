import { asc, eq, gt, lte, type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { type LogEvent, type LogRow, logCheckpoints, logHead, logNodes, logVerifiedHead, residencyLog } from "@/db/schema";
import { canonicalJson, sha256Hex } from "./canonical";
import { recordLogReceipt } from "./log-receipts";
import { appendSigner } from "./log-identity";
import { catchUpTree, type LogReceipt, treeStep } from "./log-store";

export const GENESIS_HASH = "0".repeat(64);

/** A log row as published: the fixed fields plus the event's own details. */
export type PublishedLogRow = { seq: number; event: LogEvent; did: string; at: string; hash: string; prev_hash: string } & Record<string, string | number | boolean | null>;

/** What a row's hash covers: the published row without its own hash. */
function hashOf(row: Omit<PublishedLogRow, "hash">): string {
  return sha256Hex(canonicalJson(row));
}

export function publishLogRow(row: LogRow): PublishedLogRow {
  return { seq: row.seq, event: row.event, did: row.did, at: row.at.toISOString(), ...row.details, hash: row.hash, prev_hash: row.prevHash };
}

/** An appended row and the receipt its answer carries (lib/city/log-store.ts). */
export interface Appended {
  row: PublishedLogRow;
  receipt: LogReceipt;
}

/** The log's head as an appender holds it (table log_head): the last row and the tree's edge at its size. */
export interface LogHead {
  seq: number;
  hash: string;
  at: Date | null;
  /** Null when no checkpoint of that size exists yet (rows written before the tree, or imported). */
  edge: string | null;
}

const HEAD_COLUMNS = sql`seq AS log_seq, hash AS log_hash, at AS log_at, edge AS log_edge`;

/**
 * The query that locks the log's head and reads it. FOR UPDATE hands a writer that waited the
 * head as the appender before it committed it, so the lock and the read are one statement.
 */
export const LOCK_LOG_HEAD = sql`SELECT ${HEAD_COLUMNS} FROM ${logHead} WHERE id = 1 FOR UPDATE`;

/**
 * LOCK_LOG_HEAD as a lateral join after the row its statement locks first (`column`, a column of
 * that row): the citizen's row, then the head, in the same order as every appender, so two writes
 * of one citizen never wait on each other crosswise. Nothing is locked when that row is missing.
 * A write folds it into its first statement (the caller's look-up: lib/city/credentials.ts).
 */
export function lockLogHeadAfter(column: SQL): SQL {
  return sql`CROSS JOIN LATERAL (SELECT ${HEAD_COLUMNS} FROM ${logHead} WHERE id = 1 AND ${column} IS NOT NULL FOR UPDATE) head`;
}

/**
 * LOCK_LOG_HEAD as a lateral join taken only when `condition` (on the statement's other rows and
 * CTEs) holds: a statement that first decides whether it will append (its windows counted, the
 * citizen's row found away) locks the head only then. Its columns are NULL when it was not taken.
 */
export function lockLogHeadIf(condition: SQL): SQL {
  return sql`LEFT JOIN LATERAL (SELECT ${HEAD_COLUMNS} FROM ${logHead} WHERE id = 1 AND ${condition} FOR UPDATE) head ON true`;
}

/** The head read by LOCK_LOG_HEAD (or lockLogHeadAfter), from a row of the statement that selected its columns. */
export function logHeadOf(row: { log_seq: number | string; log_hash: string; log_at: Date | string | null; log_edge: string | null }): LogHead {
  return { seq: Number(row.log_seq), hash: row.log_hash, at: row.log_at === null ? null : new Date(row.log_at), edge: row.log_edge };
}

/** Locks the log's head for this transaction and reads it: one statement. */
export async function lockLogHead(db: Database): Promise<LogHead> {
  return logHeadOf(rowsOf<Parameters<typeof logHeadOf>[0]>(await db.execute(LOCK_LOG_HEAD))[0]!);
}

/** An append worked out against a locked head: the row, its receipt, and the CTEs that write it. */
export interface PreparedAppend extends Appended {
  /** `log_appended`, `log_grown` and `log_signed`: for the WITH of the statement that also makes the write it records. */
  ctes: SQL;
}

/**
 * Works out the next row of the log after `head` (which this transaction must hold locked): its
 * hash chained to the head's, the tree's new nodes and a signed checkpoint of the new size, as
 * the CTEs of one INSERT statement (all of it only `when` a condition on that statement's other
 * CTEs holds). The triggers of migration 0023 move the head in that statement.
 * Only rows written before the tree (the head has no edge) cost statements here, once.
 */
export async function prepareAppend(
  db: Database,
  head: LogHead,
  entry: { event: LogEvent; did: string; at: Date; details?: Record<string, string | number | boolean | null>; when?: SQL },
): Promise<PreparedAppend> {
  // Refuses (log_identity_mismatch) unless this instance's origin and key are the log's recorded ones.
  const signer = await appendSigner(db, entry.at);
  const seq = head.seq + 1;
  // seq order is time order: a writer that waited for the lock never stamps a time before its predecessor's.
  const at = head.at && head.at > entry.at ? head.at : entry.at;
  const prevHash = head.seq === 0 ? GENESIS_HASH : head.hash;
  const details = entry.details ?? {};
  const body = { seq, event: entry.event, did: entry.did, at: at.toISOString(), ...details, prev_hash: prevHash };
  const row: PublishedLogRow = { ...body, hash: hashOf(body) };
  const edge = head.seq === 0 ? "" : (head.edge ?? (await catchUpTree(db, signer, head.seq, entry.at)));
  const step = treeStep(edge, row, signer);
  const nodes = sql.join(step.nodes.map((n) => sql`(${n.level}::smallint, ${n.idx}::bigint, ${n.hash})`), sql`, `);
  const c = step.checkpoint;
  // `when`, a condition on the statement's other CTEs, makes the whole append conditional.
  const when = entry.when ?? sql`true`;
  const ctes = sql`log_appended AS (
      INSERT INTO ${residencyLog} (seq, event, did, at, details, prev_hash, hash)
      SELECT ${seq}, ${entry.event}, ${entry.did}, ${row.at}::timestamptz, ${JSON.stringify(details)}::jsonb, ${prevHash}, ${row.hash} WHERE ${when}
    ), log_grown AS (INSERT INTO ${logNodes} (level, idx, hash) SELECT * FROM (VALUES ${nodes}) AS v WHERE ${when}),
    log_signed AS (INSERT INTO ${logCheckpoints} (size, root, edge, note, signed_at) SELECT ${c.size}, ${c.root}, ${c.edge}, ${c.note}, ${entry.at.toISOString()}::timestamptz WHERE ${when})`;
  return { row, receipt: step.receipt, ctes };
}

/** Once the statement with a prepared append's CTEs ran: its receipt goes to the answer (lib/city/log-receipts.ts). */
export function appended(prepared: PreparedAppend): Appended {
  recordLogReceipt(prepared.receipt);
  return { row: prepared.row, receipt: prepared.receipt };
}

/**
 * Appends one event to the residency log, chained to the row before it, and grows the log's
 * Merkle tree with a signed checkpoint of the new size: two statements, the head's lock and read,
 * then the INSERT of the row, its new tree nodes and its checkpoint; one, the INSERT, when the
 * caller holds the head already (`head`, from lockLogHead in the same transaction). A write that
 * can fold its own change into that INSERT uses prepareAppend instead.
 */
export async function appendLog(
  db: Database,
  entry: { event: LogEvent; did: string; at: Date; details?: Record<string, string | number | boolean | null> },
  head?: LogHead,
): Promise<Appended> {
  const prepared = await prepareAppend(db, head ?? (await lockLogHead(db)), entry);
  await db.execute(sql`WITH ${prepared.ctes} SELECT 1`);
  return appended(prepared);
}

export async function readLogPage(db: Database, after: number, limit: number): Promise<{ rows: PublishedLogRow[]; nextAfter: number | null }> {
  const rows = await db.select().from(residencyLog).where(gt(residencyLog.seq, after)).orderBy(asc(residencyLog.seq)).limit(limit + 1);
  const page = rows.slice(0, limit).map(publishLogRow);
  return { rows: page, nextAfter: rows.length > limit ? page[page.length - 1]!.seq : null };
}

export interface ChainReport {
  intact: boolean;
  rows_checked: number;
  head_hash: string;
  first_broken: { seq: number; reason: string } | null;
}

/**
 * Checks the chain and names the first row that does not hold, at a bounded cost per call. It
 * starts from the remembered verified head (table log_verified_head): the head row must still be
 * there with the same hash; then one page of the rows before the head is rehashed from a rotating
 * audit cursor (the whole remembered chain again every few calls, at once while the log is small),
 * and every row after the head is hashed. A chain found intact moves the head forward. The rows
 * before the head are append-only (triggers refuse UPDATE, DELETE and TRUNCATE), so only the
 * database owner disabling the triggers could change one, and the audit finds it within
 * ceil(head / page) calls. `rows_checked` counts the rows the report covers, the remembered ones included.
 */
export async function verifyLog(db: Database, now: Date = new Date(), pageSize = 1000): Promise<ChainReport> {
  const [head] = await db.select().from(logVerifiedHead).where(eq(logVerifiedHead.id, 1));
  let auditNext = 0;
  if (head) {
    const [row] = await db.select().from(residencyLog).where(eq(residencyLog.seq, head.seq));
    if (!row || row.hash !== head.hash) {
      return { intact: false, rows_checked: head.seq - 1, head_hash: GENESIS_HASH, first_broken: { seq: head.seq, reason: "the row at the verified head is missing or changed since it was verified" } };
    }
    const from = head.auditAfter < head.seq ? head.auditAfter : 0;
    const audit = await checkRows(db, from, Math.min(pageSize, head.seq - from));
    if (audit.broken) return audit.broken;
    auditNext = audit.lastSeq >= head.seq ? 0 : audit.lastSeq;
  }
  const start = head?.seq ?? 0;
  let report: { broken: ChainReport | null; lastSeq: number; lastHash: string } = { broken: null, lastSeq: start, lastHash: head?.hash ?? GENESIS_HASH };
  for (;;) {
    const page = await checkRows(db, report.lastSeq, pageSize, report.lastHash);
    if (page.broken) return page.broken;
    const full = page.lastSeq - report.lastSeq === pageSize;
    report = page;
    if (!full) break;
  }
  if (report.lastSeq > start || (head && auditNext !== head.auditAfter)) await rememberHead(db, report.lastSeq, report.lastHash, auditNext, now);
  return { intact: true, rows_checked: report.lastSeq, head_hash: report.lastHash, first_broken: null };
}

/**
 * Checks up to `limit` rows after seq `after`: gapless seq, prev_hash naming the row before, and
 * each row's own hash. The hash of row `after` is read unless the caller knows it.
 */
async function checkRows(db: Database, after: number, limit: number, prevHash?: string): Promise<{ broken: ChainReport | null; lastSeq: number; lastHash: string }> {
  let expectedPrev = prevHash ?? GENESIS_HASH;
  if (prevHash === undefined && after > 0) {
    const [prev] = await db.select({ hash: residencyLog.hash }).from(residencyLog).where(eq(residencyLog.seq, after));
    if (!prev) return { broken: brokenAt(after, after - 1, GENESIS_HASH, `seq ${after} is missing (a row is missing)`), lastSeq: after, lastHash: GENESIS_HASH };
    expectedPrev = prev.hash;
  }
  let expectedSeq = after + 1;
  if (limit <= 0) return { broken: null, lastSeq: after, lastHash: expectedPrev };
  const rows = await db.select().from(residencyLog).where(gt(residencyLog.seq, after)).orderBy(asc(residencyLog.seq)).limit(limit);
  for (const row of rows) {
    const published = publishLogRow(row);
    if (row.seq !== expectedSeq) return { broken: brokenAt(row.seq, expectedSeq - 1, expectedPrev, `seq ${row.seq} found where ${expectedSeq} was expected (a row is missing)`), lastSeq: after, lastHash: expectedPrev };
    if (row.prevHash !== expectedPrev) return { broken: brokenAt(row.seq, expectedSeq - 1, expectedPrev, "prev_hash does not name the row before it"), lastSeq: after, lastHash: expectedPrev };
    if (hashOf(withoutHash(published)) !== published.hash) return { broken: brokenAt(row.seq, expectedSeq - 1, expectedPrev, "hash does not match the row's content (the row was changed)"), lastSeq: after, lastHash: expectedPrev };
    expectedPrev = published.hash;
    expectedSeq += 1;
  }
  return { broken: null, lastSeq: expectedSeq - 1, lastHash: expectedPrev };
}

function brokenAt(seq: number, checked: number, headHash: string, reason: string): ChainReport {
  return { intact: false, rows_checked: checked, head_hash: headHash, first_broken: { seq, reason } };
}

function withoutHash(row: PublishedLogRow): Omit<PublishedLogRow, "hash"> {
  const { hash: _hash, ...rest } = row;
  return rest;
}

/** Moves the verified head forward, never back (parallel verifications may race), and the audit cursor with it. */
async function rememberHead(db: Database, seq: number, hash: string, auditAfter: number, now: Date): Promise<void> {
  await db
    .insert(logVerifiedHead)
    .values({ id: 1, seq, hash, auditAfter, verifiedAt: now })
    .onConflictDoUpdate({ target: logVerifiedHead.id, set: { seq, hash, auditAfter, verifiedAt: now }, setWhere: lte(logVerifiedHead.seq, seq) });
}
