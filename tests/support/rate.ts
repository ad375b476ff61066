import { sql, type SQL } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

/**
 * The attempts rate windows hold (rate_windows keeps one row per window, or per stripe of a city-wide
 * one, its attempts counted per bucket): with `scope` and `subject` the attempts of one window, with
 * `like` every subject matching it. Every bucket a row still keeps counts, aged or not.
 */
export async function countedAttempts(db: Database, filter: { scope?: string; subject?: string; like?: string } = {}): Promise<number> {
  const where: SQL[] = [sql`true`];
  if (filter.scope !== undefined) where.push(sql`scope = ${filter.scope}`);
  if (filter.subject !== undefined) where.push(sql`subject = ${filter.subject}`);
  if (filter.like !== undefined) where.push(sql`subject LIKE ${filter.like}`);
  const result = await db.execute(sql`SELECT coalesce(sum(c), 0)::int AS n FROM rate_windows, unnest(counts) AS c WHERE ${sql.join(where, sql` AND `)}`);
  return Number(rowsOf<{ n: number }>(result)[0]!.n);
}
