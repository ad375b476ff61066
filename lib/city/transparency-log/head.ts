import { type SQL, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import type { LogDescriptor } from "./descriptor";

/** A log's head (table log_head, identity_log_head) and the lock every appender takes on it, alone or folded into a statement of its own. */

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
 * The query that locks a log's head and reads it. FOR UPDATE hands a writer that waited the
 * head as the appender before it committed it, so the lock and the read are one statement.
 */
export function lockHeadQuery(log: LogDescriptor): SQL {
  return sql`SELECT ${HEAD_COLUMNS} FROM ${log.tables.head} WHERE id = 1 FOR UPDATE`;
}

/**
 * The head's lock as a lateral join after the row its statement locks first (`column`, a column of
 * that row): the citizen's row, then the head, in the same order as every appender, so two writes
 * of one citizen never wait on each other crosswise. Nothing is locked when that row is missing.
 * A write folds it into its first statement (the caller's look-up: lib/city/credentials.ts).
 */
export function lockLogHeadAfter(log: LogDescriptor, column: SQL): SQL {
  return sql`CROSS JOIN LATERAL (SELECT ${HEAD_COLUMNS} FROM ${log.tables.head} WHERE id = 1 AND ${column} IS NOT NULL FOR UPDATE) head`;
}

/**
 * The head's lock as a lateral join taken only when `condition` (on the statement's other rows and
 * CTEs) holds: a statement that first decides whether it will append (its windows counted, the
 * citizen's row found away) locks the head only then. Its columns are NULL when it was not taken.
 */
export function lockLogHeadIf(log: LogDescriptor, condition: SQL): SQL {
  return sql`LEFT JOIN LATERAL (SELECT ${HEAD_COLUMNS} FROM ${log.tables.head} WHERE id = 1 AND ${condition} FOR UPDATE) head ON true`;
}

/** The head read by lockHeadQuery (or lockLogHeadAfter, lockLogHeadIf), from a row of the statement that selected its columns. */
export function logHeadOf(row: { log_seq: number | string; log_hash: string; log_at: Date | string | null; log_edge: string | null }): LogHead {
  return { seq: Number(row.log_seq), hash: row.log_hash, at: row.log_at === null ? null : new Date(row.log_at), edge: row.log_edge };
}

/** Locks the log's head for this transaction and reads it: one statement. */
export async function lockLogHead(log: LogDescriptor, db: Database): Promise<LogHead> {
  return logHeadOf(rowsOf<Parameters<typeof logHeadOf>[0]>(await db.execute(lockHeadQuery(log)))[0]!);
}
