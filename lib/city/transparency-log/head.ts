import { type SQL, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import type { LogDescriptor } from "./descriptor";

/**
 * A log's head (table log_head, identity_log_head) and the lock every appender takes on it, alone or
 * folded into a statement of its own. Its columns and its lateral's alias carry the log's sqlPrefix
 * (`head.log_seq` for the residency log, `identity_head.identity_log_seq` for the identity log), so
 * one statement may lock both heads.
 */

/** The log's head as an appender holds it (table log_head): the last row and the tree's edge at its size. */
export interface LogHead {
  seq: number;
  hash: string;
  at: Date | null;
  /** Null when no checkpoint of that size exists yet (rows written before the tree, or imported). */
  edge: string | null;
}

/** A head's columns as a statement of the residency log selects them (another log's carry its sqlPrefix). */
export type LogHeadRow = { log_seq: number | string; log_hash: string; log_at: Date | string | null; log_edge: string | null };

const headColumns = (log: LogDescriptor) => {
  const p = log.sqlPrefix;
  return sql.raw(`seq AS ${p}log_seq, hash AS ${p}log_hash, at AS ${p}log_at, edge AS ${p}log_edge`);
};
const headAlias = (log: LogDescriptor) => sql.raw(`${log.sqlPrefix}head`);

/**
 * The query that locks a log's head and reads it. FOR UPDATE hands a writer that waited the
 * head as the appender before it committed it, so the lock and the read are one statement.
 */
export function lockHeadQuery(log: LogDescriptor): SQL {
  return sql`SELECT ${headColumns(log)} FROM ${log.tables.head} WHERE id = 1 FOR UPDATE`;
}

/**
 * The head's lock as a lateral join after the row its statement locks first (`column`, a column of
 * that row): the citizen's row, then the head, in the same order as every appender, so two writes
 * of one citizen never wait on each other crosswise. Nothing is locked when that row is missing.
 * A write folds it into its first statement (the caller's look-up: lib/city/credentials.ts).
 */
export function lockLogHeadAfter(log: LogDescriptor, column: SQL): SQL {
  return sql`CROSS JOIN LATERAL (SELECT ${headColumns(log)} FROM ${log.tables.head} WHERE id = 1 AND ${column} IS NOT NULL FOR UPDATE) ${headAlias(log)}`;
}

/**
 * The head's lock as a lateral join taken only when `condition` (on the statement's other rows and
 * CTEs) holds: a statement that first decides whether it will append (its windows counted, the
 * citizen's row found away) locks the head only then. Its columns are NULL when it was not taken.
 * A condition on an earlier lateral's columns (the residency log's head taken) orders the locks.
 */
export function lockLogHeadIf(log: LogDescriptor, condition: SQL): SQL {
  return sql`LEFT JOIN LATERAL (SELECT ${headColumns(log)} FROM ${log.tables.head} WHERE id = 1 AND ${condition} FOR UPDATE) ${headAlias(log)} ON true`;
}

/** The head read by lockHeadQuery (or lockLogHeadAfter, lockLogHeadIf) of the residency log, from a row of the statement that selected its columns. */
export function logHeadOf(row: LogHeadRow): LogHead {
  return { seq: Number(row.log_seq), hash: row.log_hash, at: row.log_at === null ? null : new Date(row.log_at), edge: row.log_edge };
}

/** A log's head from a row of the statement that locked it; null when its lock was not taken (lockLogHeadIf). */
export function logHeadIn(log: LogDescriptor, row: Record<string, unknown>): LogHead | null {
  const column = (name: string) => row[`${log.sqlPrefix}log_${name}`];
  if (column("seq") === null || column("seq") === undefined) return null;
  return logHeadOf({
    log_seq: column("seq") as LogHeadRow["log_seq"],
    log_hash: column("hash") as string,
    log_at: column("at") as LogHeadRow["log_at"],
    log_edge: column("edge") as string | null,
  });
}

/** Locks the log's head for this transaction and reads it: one statement. */
export async function lockLogHead(log: LogDescriptor, db: Database): Promise<LogHead> {
  return logHeadIn(log, rowsOf<Record<string, unknown>>(await db.execute(lockHeadQuery(log)))[0]!)!;
}
