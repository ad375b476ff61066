import { asc, desc, eq, gt, lte } from "drizzle-orm";
import type { Database } from "@/db/client";
import type { LogDescriptor } from "./descriptor";
import { GENESIS_HASH, hashOf, type PublishedLogRow, publishLogRow } from "./row";

/** A log's hash chain: its pages as published, and the check that every row still chains to the one before. */

/** The newest rows of a log, newest first, as published. */
export async function readLatestRows(log: LogDescriptor, db: Database, limit: number): Promise<PublishedLogRow[]> {
  const { rows: table } = log.tables;
  return (await db.select().from(table).orderBy(desc(table.seq)).limit(limit)).map(publishLogRow);
}

/** One citizen's rows of a log (by its DID index), newest first, as published: at most `limit`. */
export async function readCitizenRows(log: LogDescriptor, db: Database, did: string, limit: number): Promise<PublishedLogRow[]> {
  const { rows: table } = log.tables;
  return (await db.select().from(table).where(eq(table.did, did)).orderBy(desc(table.seq)).limit(limit)).map(publishLogRow);
}

export async function readLogPage(
  log: LogDescriptor,
  db: Database,
  after: number,
  limit: number,
): Promise<{ rows: PublishedLogRow[]; nextAfter: number | null }> {
  const { rows: table } = log.tables;
  const rows = await db
    .select()
    .from(table)
    .where(gt(table.seq, after))
    .orderBy(asc(table.seq))
    .limit(limit + 1);
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
export async function verifyHashChain(log: LogDescriptor, db: Database, now: Date = new Date(), pageSize = 1000): Promise<ChainReport> {
  const { rows: table, verifiedHead } = log.tables;
  const [head] = await db.select().from(verifiedHead).where(eq(verifiedHead.id, 1));
  let auditNext = 0;
  if (head) {
    const [row] = await db.select().from(table).where(eq(table.seq, head.seq));
    if (!row || row.hash !== head.hash) {
      return {
        intact: false,
        rows_checked: head.seq - 1,
        head_hash: GENESIS_HASH,
        first_broken: { seq: head.seq, reason: "the row at the verified head is missing or changed since it was verified" },
      };
    }
    const from = head.auditAfter < head.seq ? head.auditAfter : 0;
    const audit = await checkRows(log, db, from, Math.min(pageSize, head.seq - from));
    if (audit.broken) return audit.broken;
    auditNext = audit.lastSeq >= head.seq ? 0 : audit.lastSeq;
  }
  const start = head?.seq ?? 0;
  let report: { broken: ChainReport | null; lastSeq: number; lastHash: string } = { broken: null, lastSeq: start, lastHash: head?.hash ?? GENESIS_HASH };
  for (;;) {
    const page = await checkRows(log, db, report.lastSeq, pageSize, report.lastHash);
    if (page.broken) return page.broken;
    const full = page.lastSeq - report.lastSeq === pageSize;
    report = page;
    if (!full) break;
  }
  if (report.lastSeq > start || (head && auditNext !== head.auditAfter)) await rememberHead(log, db, report.lastSeq, report.lastHash, auditNext, now);
  return { intact: true, rows_checked: report.lastSeq, head_hash: report.lastHash, first_broken: null };
}

/**
 * Checks up to `limit` rows after seq `after`: gapless seq, prev_hash naming the row before, and
 * each row's own hash. The hash of row `after` is read unless the caller knows it.
 */
async function checkRows(
  log: LogDescriptor,
  db: Database,
  after: number,
  limit: number,
  prevHash?: string,
): Promise<{ broken: ChainReport | null; lastSeq: number; lastHash: string }> {
  const { rows: table } = log.tables;
  let expectedPrev = prevHash ?? GENESIS_HASH;
  if (prevHash === undefined && after > 0) {
    const [prev] = await db.select({ hash: table.hash }).from(table).where(eq(table.seq, after));
    if (!prev)
      return { broken: brokenAt(after, after - 1, GENESIS_HASH, `seq ${after} is missing (a row is missing)`), lastSeq: after, lastHash: GENESIS_HASH };
    expectedPrev = prev.hash;
  }
  let expectedSeq = after + 1;
  if (limit <= 0) return { broken: null, lastSeq: after, lastHash: expectedPrev };
  const rows = await db.select().from(table).where(gt(table.seq, after)).orderBy(asc(table.seq)).limit(limit);
  for (const row of rows) {
    const published = publishLogRow(row);
    if (row.seq !== expectedSeq)
      return {
        broken: brokenAt(row.seq, expectedSeq - 1, expectedPrev, `seq ${row.seq} found where ${expectedSeq} was expected (a row is missing)`),
        lastSeq: after,
        lastHash: expectedPrev,
      };
    if (row.prevHash !== expectedPrev)
      return { broken: brokenAt(row.seq, expectedSeq - 1, expectedPrev, "prev_hash does not name the row before it"), lastSeq: after, lastHash: expectedPrev };
    if (hashOf(withoutHash(published)) !== published.hash)
      return {
        broken: brokenAt(row.seq, expectedSeq - 1, expectedPrev, "hash does not match the row's content (the row was changed)"),
        lastSeq: after,
        lastHash: expectedPrev,
      };
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
async function rememberHead(log: LogDescriptor, db: Database, seq: number, hash: string, auditAfter: number, now: Date): Promise<void> {
  const { verifiedHead } = log.tables;
  await db
    .insert(verifiedHead)
    .values({ id: 1, seq, hash, auditAfter, verifiedAt: now })
    .onConflictDoUpdate({ target: verifiedHead.id, set: { seq, hash, auditAfter, verifiedAt: now }, setWhere: lte(verifiedHead.seq, seq) });
}
