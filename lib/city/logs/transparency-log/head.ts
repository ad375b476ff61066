import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import type { LogDescriptor } from "./descriptor";

/**
 * A log's head (table log_head, identity_log_head) and its lock, which only the integrator takes
 * (./integrate.ts): a write records its entry as pending and never waits for the head.
 */

/** The log's head as the integrator holds it: the last row and the tree's edge at its size. */
export interface LogHead {
  seq: number;
  hash: string;
  at: Date | null;
  /** Null when no checkpoint of that size exists yet (rows written before the tree, or imported). */
  edge: string | null;
}

type HeadRow = { seq: number | string; hash: string; at: Date | string | null; edge: string | null };

function headOf(row: HeadRow): LogHead {
  return { seq: Number(row.seq), hash: row.hash, at: row.at === null ? null : new Date(row.at), edge: row.edge };
}

/**
 * Locks the log's head for this transaction and reads it: one statement. FOR UPDATE hands a
 * transaction that waited the head as the integrator before it committed it, so the lock and the
 * read are one. Blocking: for an integrator past its bounded wait, and the import of earlier facts.
 */
export async function lockLogHead(log: LogDescriptor, db: Database): Promise<LogHead> {
  return headOf(rowsOf<HeadRow>(await db.execute(sql`SELECT seq, hash, at, edge FROM ${log.tables.head} WHERE id = 1 FOR UPDATE`))[0]!);
}

/** The head locked for this transaction, or null at once when another holds it (SKIP LOCKED: nobody waits in a queue for it). */
export async function tryLockLogHead(log: LogDescriptor, db: Database): Promise<LogHead | null> {
  const [row] = rowsOf<HeadRow>(await db.execute(sql`SELECT seq, hash, at, edge FROM ${log.tables.head} WHERE id = 1 FOR UPDATE SKIP LOCKED`));
  return row ? headOf(row) : null;
}
