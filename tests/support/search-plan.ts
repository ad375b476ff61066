import { sql } from "drizzle-orm";
import { type Database, rowsOf } from "@/db/client";
import { searchStatement } from "@/lib/city/directory-search";

/** EXPLAIN of the statement a directory search runs (first page, default filters), as one text. */
export async function searchPlanOf(db: Database, q: string, options: { analyze?: boolean } = {}): Promise<string> {
  const statement = searchStatement(db, { q, presentOnly: false, limit: 100 });
  if (!statement) throw new Error(`no statement for ${JSON.stringify(q)}`);
  const explain = options.analyze ? sql`EXPLAIN (ANALYZE, COSTS OFF) ` : sql`EXPLAIN (COSTS OFF) `;
  const rows = rowsOf<Record<string, string>>(await db.execute(sql`${explain}${statement.getSQL()}`));
  return rows.map((row) => Object.values(row)[0]).join("\n");
}
