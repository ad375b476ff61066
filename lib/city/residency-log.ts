import { asc, desc, gt } from "drizzle-orm";
import type { Database } from "@/db/client";
import { type LogEvent, type LogRow, residencyLog } from "@/db/schema";
import { canonicalJson, sha256Hex } from "./canonical";
import { holdLock } from "./locks";

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

/**
 * Appends one event to the residency log, chained to the row before it. The advisory lock
 * serialises appenders so that seq has no gaps and every prev_hash names the true predecessor.
 */
export async function appendLog(
  db: Database,
  entry: { event: LogEvent; did: string; at: Date; details?: Record<string, string | number | boolean | null> },
): Promise<PublishedLogRow> {
  await holdLock(db, "residency_log");
  const [last] = await db.select({ seq: residencyLog.seq, hash: residencyLog.hash, at: residencyLog.at }).from(residencyLog).orderBy(desc(residencyLog.seq)).limit(1);
  const seq = (last?.seq ?? 0) + 1;
  // seq order is time order: a writer that waited for the lock never stamps a time before its predecessor's.
  const at = last && last.at > entry.at ? last.at : entry.at;
  const prevHash = last?.hash ?? GENESIS_HASH;
  const details = entry.details ?? {};
  const body = { seq, event: entry.event, did: entry.did, at: at.toISOString(), ...details, prev_hash: prevHash };
  const hash = hashOf(body);
  await db.insert(residencyLog).values({ seq, event: entry.event, did: entry.did, at, details, prevHash, hash });
  return { ...body, hash };
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

/** Recomputes the whole chain, page by page, and names the first row that does not hold. */
export async function verifyLog(db: Database, pageSize = 1000): Promise<ChainReport> {
  let expectedPrev = GENESIS_HASH;
  let expectedSeq = 1;
  let checked = 0;
  for (let after = 0; ; ) {
    const rows = await db.select().from(residencyLog).where(gt(residencyLog.seq, after)).orderBy(asc(residencyLog.seq)).limit(pageSize);
    for (const row of rows) {
      const published = publishLogRow(row);
      const { hash, ...rest } = published;
      const broken = (reason: string): ChainReport => ({ intact: false, rows_checked: checked, head_hash: expectedPrev, first_broken: { seq: row.seq, reason } });
      if (row.seq !== expectedSeq) return broken(`seq ${row.seq} found where ${expectedSeq} was expected (a row is missing)`);
      if (row.prevHash !== expectedPrev) return broken("prev_hash does not name the row before it");
      if (hashOf(rest) !== hash) return broken("hash does not match the row's content (the row was changed)");
      expectedPrev = hash;
      expectedSeq += 1;
      checked += 1;
    }
    if (rows.length < pageSize) break;
    after = rows[rows.length - 1]!.seq;
  }
  return { intact: true, rows_checked: checked, head_hash: expectedPrev, first_broken: null };
}
