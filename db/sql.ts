import { createHash } from "node:crypto";
import type { SQL } from "drizzle-orm";
import type { PgDialect, PgSession } from "drizzle-orm/pg-core";
import { env } from "@/lib/env";
import type { Database } from "./client";
import { markPrepared } from "./pglite-prepared";
import { StatementTexts } from "./statement-shapes";

/** Rows of a raw `db.execute` result: PGlite, pg and the Neon pool all answer `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? (result as T[])) as T[];
}

/**
 * `db.execute` for a statement sent on every heartbeat, as a named prepared statement: the server
 * parses it once per connection and each later call sends only its parameters; the server plans
 * it once too while its generic plan is estimated no dearer than a custom one (a value the
 * estimate hangs on is best a subquery: live-delta.ts). Measured on the poll (pg, 2 cores): 1.3 to
 * 1.5 times the polls a second, at 1,000 and at 100,000 citizens (BENCHMARKS.md). The name is a
 * hash of the text, so one name is always one text, and a connection keeps one statement per
 * shape of the caller's SQL: the statement's values must be parameters, never spliced in. Drizzle's own path (its
 * logger counts it), on every driver; on PGlite the name is honoured by db/pglite-prepared.ts (PGlite's
 * own query has no names), where the gate's reading took 32-42 ms to plan each time. A pooler in
 * transaction mode must support protocol-level prepared statements (PgBouncer 1.21 and later with
 * max_prepared_statements, as Neon's); CITY_PREPARED_STATEMENTS=0 sends the statement unnamed.
 */
export function executePrepared(db: Database, statement: SQL): Promise<unknown> {
  if (env().CITY_PREPARED_STATEMENTS === "0") return db.execute(statement);
  const { session, dialect } = db as unknown as { session: PgSession; dialect: PgDialect };
  const { query, name, reused } = preparedTexts.textOf(statement, (s) => dialect.sqlToQuery(s), statementName);
  if (!reused) markPrepared(query.sql, name);
  return session.prepareQuery(query, undefined, name, false).execute();
}

/**
 * The prepared statements' texts, built once per shape (./statement-shapes.ts): a statement sent
 * on every request is built by drizzle once, then only its values are gathered (the gate's
 * admission: ~15 kB and ~450 parameters, issue 42).
 */
export const preparedTexts = new StatementTexts();

/** The name of a statement's text: a hash, so one name is always one text on a connection. */
function statementName(text: string): string {
  return `city_${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
}
