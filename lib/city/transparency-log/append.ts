import { sql, type SQL } from "drizzle-orm";
import type { Database } from "@/db/client";
import { appendStep, type LogReceipt } from "@/lib/tlog/append";
import { catchUpTree } from "./checkpoints";
import type { LogDescriptor } from "./descriptor";
import { lockLogHead, type LogHead } from "./head";
import { appendSigner } from "./identity";
import { recordLogReceipt } from "./receipts";
import { GENESIS_HASH, hashOf, leafDataOf, type PublishedLogRow } from "./row";

/** An appended row and the receipt its answer carries (lib/tlog/append.ts). */
export interface Appended {
  row: PublishedLogRow;
  logReceipt: LogReceipt;
}

/** An append worked out against a locked head: the row, its receipt, and the CTEs that write it. */
export interface PreparedAppend extends Appended {
  /**
   * `log_appended`, `log_grown` and `log_signed` (each after the log's sqlPrefix: `identity_log_appended`...):
   * for the WITH of the statement that also makes the write it records, beside another log's.
   */
  ctes: SQL;
}

/**
 * Works out the next row of the log after `head` (which this transaction must hold locked): its
 * hash chained to the head's, the tree's new nodes and a signed checkpoint of the new size, as
 * the CTEs of one INSERT statement (all of it only `when` a condition on that statement's other
 * CTEs holds). The triggers of migrations 0023 and 0032 move the head in that statement.
 * Only rows written before the tree (the head has no edge) cost statements here, once.
 */
export async function prepareAppend(
  log: LogDescriptor,
  db: Database,
  head: LogHead,
  entry: { event: string; did: string; at: Date; details?: Record<string, string | number | boolean | null>; when?: SQL },
): Promise<PreparedAppend> {
  // Refuses (log_identity_mismatch) unless this instance's origin and key are the log's recorded ones.
  const signer = await appendSigner(log, db, entry.at);
  const seq = head.seq + 1;
  // seq order is time order: a writer that waited for the lock never stamps a time before its predecessor's.
  const at = head.at && head.at > entry.at ? head.at : entry.at;
  const prevHash = head.seq === 0 ? GENESIS_HASH : head.hash;
  const details = entry.details ?? {};
  const body = { seq, event: entry.event, did: entry.did, at: at.toISOString(), ...details, prev_hash: prevHash };
  const row: PublishedLogRow = { ...body, hash: hashOf(body) };
  const edge = head.seq === 0 ? "" : (head.edge ?? (await catchUpTree(log, db, signer, head.seq, entry.at)));
  const step = appendStep(edge, row.seq, leafDataOf(row), signer);
  const nodes = sql.join(
    step.nodes.map((n) => sql`(${n.level}::smallint, ${n.idx}::bigint, ${n.hash})`),
    sql`, `,
  );
  const c = step.checkpoint;
  // `when`, a condition on the statement's other CTEs, makes the whole append conditional.
  const when = entry.when ?? sql`true`;
  const name = (cte: string) => sql.raw(`${log.sqlPrefix}log_${cte}`);
  const ctes = sql`${name("appended")} AS (
      INSERT INTO ${log.tables.rows} (seq, event, did, at, details, prev_hash, hash)
      SELECT ${seq}, ${entry.event}, ${entry.did}, ${row.at}::timestamptz, ${JSON.stringify(details)}::jsonb, ${prevHash}, ${row.hash} WHERE ${when}
    ), ${name("grown")} AS (INSERT INTO ${log.tables.nodes} (level, idx, hash) SELECT * FROM (VALUES ${nodes}) AS v WHERE ${when}),
    ${name("signed")} AS (INSERT INTO ${log.tables.checkpoints} (size, root, edge, note, signed_at) SELECT ${c.size}, ${c.root}, ${c.edge}, ${c.note}, ${entry.at.toISOString()}::timestamptz WHERE ${when})`;
  return { row, logReceipt: step.receipt, ctes };
}

/** Once the statement with a prepared append's CTEs ran: its receipt goes to the answer (./receipts.ts). */
export function appended(log: LogDescriptor, prepared: PreparedAppend): Appended {
  recordLogReceipt(log, prepared.logReceipt);
  return { row: prepared.row, logReceipt: prepared.logReceipt };
}

/**
 * Appends one event to a log, chained to the row before it, and grows the log's
 * Merkle tree with a signed checkpoint of the new size: two statements, the head's lock and read,
 * then the INSERT of the row, its new tree nodes and its checkpoint; one, the INSERT, when the
 * caller holds the head already (`head`, from lockLogHead in the same transaction). A write that
 * can fold its own change into that INSERT uses prepareAppend instead.
 */
export async function appendLog(
  log: LogDescriptor,
  db: Database,
  entry: { event: string; did: string; at: Date; details?: Record<string, string | number | boolean | null> },
  head?: LogHead,
): Promise<Appended> {
  const prepared = await prepareAppend(log, db, head ?? (await lockLogHead(log, db)), entry);
  await db.execute(sql`WITH ${prepared.ctes} SELECT 1`);
  return appended(log, prepared);
}
