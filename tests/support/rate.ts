import { sql, type SQL } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

/**
 * The attempts rate windows count (rate_windows keeps one row per window, its attempts an array):
 * with `scope` and `subject` the attempts of one window, with `like` every subject matching it.
 */
export async function countedAttempts(db: Database, filter: { scope?: string; subject?: string; like?: string } = {}): Promise<number> {
  const where: SQL[] = [sql`true`];
  if (filter.scope !== undefined) where.push(sql`scope = ${filter.scope}`);
  if (filter.subject !== undefined) where.push(sql`subject = ${filter.subject}`);
  if (filter.like !== undefined) where.push(sql`subject LIKE ${filter.like}`);
  const result = await db.execute(sql`SELECT count(*)::int AS n FROM rate_windows, unnest(ats) WHERE ${sql.join(where, sql` AND `)}`);
  return Number(rowsOf<{ n: number }>(result)[0]!.n);
}
