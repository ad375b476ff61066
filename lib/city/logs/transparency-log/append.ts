import { randomUUID } from "node:crypto";
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "@/db/client";
import type { LogReceipt } from "@/lib/tlog/append";
import type { LogDescriptor } from "./descriptor";
import { appendSigner } from "./identity";
import { receiptToCome, recordLogTicket } from "./receipts";

/**
 * An append as the write's transaction makes it: its entry recorded as pending (./integrate.ts
 * gives it its seq, hash and tree nodes after the commit, in a batch under one checkpoint), and
 * the receipt its answer carries, held in place until then (./receipts.ts).
 */
export interface Appended {
  /** The entry's ticket (a random UUID): its integrated row carries it, so its writer finds its seq. */
  ticket: string;
  /** The receipt to come: replaced in the answer by the integrated one once the write committed. */
  logReceipt: LogReceipt;
}

/** An append worked out for a statement of the write's own: its ticket, its receipt to come, and the CTE that records it. */
export interface PreparedAppend extends Appended {
  /**
   * `log_appended` (after the log's sqlPrefix: `identity_log_appended`): for the WITH of the
   * statement that also makes the write it records, beside another log's.
   */
  ctes: SQL;
}

/**
 * Works out one entry of the log as the CTE that records it pending: the INSERT of its row of the
 * pending table (numbered by a sequence, so no two writers touch the same row), only `when` a
 * condition on that statement's other CTEs holds. Nothing of the log itself is read or locked here:
 * the write's transaction never waits for another writer's append. The entry's `at` is the write's
 * time; integration stamps it no earlier than the row before (seq order is time order).
 */
export async function prepareAppend(
  log: LogDescriptor,
  db: Database,
  entry: { event: string; did: string; at: Date; details?: Record<string, string | number | boolean | null>; when?: SQL },
): Promise<PreparedAppend> {
  // Refuses (log_identity_mismatch) unless this instance's origin and key are the log's recorded
  // ones, inside the write, which then changes nothing (kept per instance: no statement).
  await appendSigner(log, db, entry.at);
  const ticket = randomUUID();
  const details = entry.details ?? {};
  const when = entry.when ?? sql`true`;
  const ctes = sql`${sql.raw(`${log.sqlPrefix}log_appended`)} AS (
      INSERT INTO ${log.tables.pending} (ticket, event, did, at, details)
      SELECT ${ticket}::uuid, ${entry.event}, ${entry.did}, ${entry.at.toISOString()}::timestamptz, ${JSON.stringify(details)}::jsonb WHERE ${when})`;
  return { ticket, logReceipt: receiptToCome(log, ticket), ctes };
}

/** Once the statement with a prepared append's CTE ran: its ticket goes to the door, which waits for its receipt after the commit (./receipts.ts). */
export function appended(log: LogDescriptor, prepared: PreparedAppend): Appended {
  recordLogTicket(log, prepared.ticket);
  return { ticket: prepared.ticket, logReceipt: prepared.logReceipt };
}

/**
 * Appends one event to a log in the caller's transaction: one INSERT of its pending entry. Its row,
 * chained to the row before it, and the tree's growth come with the next integration after the
 * commit (./integrate.ts); a write that can fold its entry into a statement of its own uses
 * prepareAppend instead.
 */
export async function appendLog(
  log: LogDescriptor,
  db: Database,
  entry: { event: string; did: string; at: Date; details?: Record<string, string | number | boolean | null> },
): Promise<Appended> {
  const prepared = await prepareAppend(log, db, entry);
  await db.execute(sql`WITH ${prepared.ctes} SELECT 1`);
  return appended(log, prepared);
}
