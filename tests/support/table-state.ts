import { sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

/*
 * What the city holds, table by table, in one statement: the suites that check a refusal or a read
 * "changes nothing" take it before and after every request, hundreds of times per suite, so it is
 * one query over every table (the names read once per database), not one per table.
 */

const names = new WeakMap<Database, Promise<string[]>>();

/** The city's tables (the schema only changes by migration, so once per database handle). */
export function tableNames(db: Database): Promise<string[]> {
  let known = names.get(db);
  if (!known) {
    known = db
      .execute(sql.raw("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1"))
      .then((result) => rowsOf<{ table_name: string }>(result).map((r) => String(r.table_name)));
    names.set(db, known);
  }
  return known;
}

const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Every table's row count, but those in `except`. */
export async function rowCounts(db: Database, except: string[] = []): Promise<Record<string, number>> {
  const tables = (await tableNames(db)).filter((name) => !except.includes(name));
  const counts =
    rowsOf<Record<string, unknown>>(
      await db.execute(sql.raw(`SELECT ${tables.map((n) => `(SELECT count(*) FROM ${quoted(n)}) AS ${quoted(n)}`).join(", ")}`)),
    )[0] ?? {};
  return Object.fromEntries(tables.map((name) => [name, Number(counts[name])]));
}

/**
 * Every table's row count and a digest of its content, but those in `except`; `ignoreColumn` is
 * left out of every row's digest (a column a call may move by design).
 */
export async function tableDigests(db: Database, options: { except?: string[]; ignoreColumn?: string } = {}): Promise<Record<string, string>> {
  const tables = (await tableNames(db)).filter((name) => !options.except?.includes(name));
  const row = (alias: string) =>
    options.ignoreColumn ? `(to_jsonb(${alias}) - '${options.ignoreColumn.replace(/'/g, "''")}')::text` : `to_jsonb(${alias})::text`;
  const columns = tables.map(
    (n, i) =>
      `(SELECT count(*) || ':' || md5(coalesce(string_agg(${row(`t${i}`)}, ',' ORDER BY ${row(`t${i}`)}), '')) FROM ${quoted(n)} t${i}) AS ${quoted(n)}`,
  );
  const digests = rowsOf<Record<string, unknown>>(await db.execute(sql.raw(`SELECT ${columns.join(", ")}`)))[0] ?? {};
  return Object.fromEntries(tables.map((name) => [name, String(digests[name])]));
}
