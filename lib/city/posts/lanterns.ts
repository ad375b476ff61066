import { sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { lanterns, posts } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { assertClean } from "@/lib/scan";
import { type Charge, chargeSql, cityFull, newcomerSql, releaseSql, STORE_ROW_BYTES, citizenShare } from "@/lib/city/bounds";

export const LANTERNS_PER_CITIZEN = 20;
export const KEYWORD_CHARS = { min: 2, max: 64 } as const;

export interface Lantern {
  id: number;
  keyword: string;
  createdAt: Date;
}

/**
 * Lights a lantern: a standing watch for a keyword over public posts written after it. The keyword
 * is lowercased by the database (the same lower() that matching uses). Lighting a keyword the
 * citizen already watches answers that lantern instead of a second one. A citizen keeps at most
 * LANTERNS_PER_CITIZEN, a count that holds under parallel requests (see below).
 */
export async function addLantern(db: Database, did: string, keyword: string, now: Date): Promise<Lantern & { created: boolean }> {
  assertClean(keyword);
  // One statement: the same keyword answers the lantern already lit; otherwise a new one is lit
  // while the citizen keeps fewer than the limit. The door holds the citizen's row exclusively
  // from its caller look-up (an earlier statement of this transaction), so parallel lightings of
  // one citizen run in turn and each counts what the one before committed. A new lantern charges
  // the city-wide store bound in the same statement, and is lit only from the charge.
  const charge: Charge = {
    store: "lanterns",
    bytes: sql`octet_length(lower(${keyword})) + ${STORE_ROW_BYTES}::int`,
    newcomer: newcomerSql(did, now),
    now,
    subject: citizenShare(did),
  };
  const result = await db.execute(sql`
    WITH same AS (SELECT id, keyword, created_at FROM ${lanterns} WHERE did = ${did} AND keyword = lower(${keyword})),
    kept AS (SELECT count(*)::int AS n FROM ${lanterns} WHERE did = ${did}),
    charged AS (${chargeSql(charge, sql`FROM kept WHERE NOT EXISTS (SELECT 1 FROM same) AND kept.n < ${LANTERNS_PER_CITIZEN}::int`)}),
    lit AS (
      INSERT INTO ${lanterns} (did, keyword, created_at)
      SELECT ${did}, lower(${keyword}), ${now.toISOString()}::timestamptz FROM charged
      RETURNING id, keyword, created_at)
    SELECT id, keyword, created_at, false AS created FROM same
    UNION ALL SELECT id, keyword, created_at, true AS created FROM lit
    UNION ALL SELECT NULL, NULL, NULL, NULL FROM kept WHERE NOT EXISTS (SELECT 1 FROM same) AND kept.n < ${LANTERNS_PER_CITIZEN}::int AND NOT EXISTS (SELECT 1 FROM lit)`);
  const [row] = rowsOf<{ id: number | string | null; keyword: string; created_at: Date | string; created: boolean }>(result);
  // The city-wide store bound (lib/city/bounds/store-bounds.ts) is full: the last line of the statement says so.
  if (row && row.id === null) throw await cityFull(db, charge);
  if (!row) {
    throw new CityError("limit_reached", `A citizen keeps at most ${LANTERNS_PER_CITIZEN} lanterns; this one was not lit and none was put out.`, {
      limit: { name: "lanterns", limit: LANTERNS_PER_CITIZEN },
    });
  }
  return { id: Number(row.id), keyword: row.keyword, createdAt: new Date(row.created_at), created: row.created === true };
}

/**
 * How far a lantern looks: the newest LANTERN_SCAN_POSTS public posts after it was lit (after
 * `since` for the return delta), found through the index on posts.created_at. A count never costs
 * more than that many posts per lantern, however long the city's history grows.
 */
export const LANTERN_SCAN_POSTS = 5000;

/**
 * The citizen's lanterns, oldest first, each with its count of matching public posts: by another
 * citizen, newer than the lantern, containing the keyword in any case. One query.
 */
export async function listLanterns(db: Database, did: string): Promise<(Lantern & { matches: number })[]> {
  const result = await db.execute(sql`
    SELECT l.id, l.keyword, l.created_at, m.n AS matches
    FROM ${lanterns} l
    LEFT JOIN LATERAL (
      SELECT count(*)::int AS n FROM (
        SELECT p.did, p.body FROM ${posts} p
        WHERE p.created_at > l.created_at
        ORDER BY p.created_at DESC LIMIT ${LANTERN_SCAN_POSTS}
      ) recent
      WHERE recent.did <> l.did AND strpos(lower(recent.body), l.keyword) > 0
    ) m ON true
    WHERE l.did = ${did}
    ORDER BY l.id`);
  return rowsOf<{ id: number | string; keyword: string; created_at: Date | string; matches: number | string }>(result).map((r) => ({
    id: Number(r.id),
    keyword: r.keyword,
    createdAt: new Date(r.created_at),
    matches: Number(r.matches),
  }));
}

/**
 * For the return delta: how many distinct public posts among the newest LANTERN_SCAN_POSTS created
 * after `since` match at least one of the citizen's lanterns (a post lit by two lanterns is one
 * match to read).
 */
export async function countLanternMatches(db: Database, did: string, since: Date): Promise<number> {
  const result = await db.execute(sql`
    SELECT count(*)::int AS n FROM (
      SELECT p.did, p.body, p.created_at FROM ${posts} p
      WHERE p.created_at > ${since.toISOString()}::timestamptz
      ORDER BY p.created_at DESC LIMIT ${LANTERN_SCAN_POSTS}
    ) recent
    WHERE EXISTS (
      SELECT 1 FROM ${lanterns} l
      WHERE l.did = ${did} AND recent.did <> l.did AND recent.created_at > l.created_at AND strpos(lower(recent.body), l.keyword) > 0
    )`);
  return Number(rowsOf<{ n: number | string }>(result)[0]?.n ?? 0);
}

/** Puts out one of the citizen's own lanterns. Another citizen's lantern is not found, not refused. */
export async function putOutLantern(db: Database, did: string, id: number): Promise<Lantern> {
  // One statement: the lantern goes and its bytes leave the city-wide store count (lib/city/bounds/store-bounds.ts).
  const [row] = rowsOf<{ id: number | string; keyword: string; created_at: Date | string }>(
    await db.execute(sql`
      WITH gone AS (DELETE FROM ${lanterns} WHERE id = ${id} AND did = ${did} RETURNING id, keyword, created_at),
      released AS (${releaseSql("lanterns", sql`(SELECT coalesce(sum(octet_length(keyword) + ${STORE_ROW_BYTES}::int), 0) FROM gone)`)})
      SELECT id, keyword, created_at FROM gone, released`),
  );
  if (!row) throw new CityError("not_found", `You have no lantern ${id}.`);
  return { id: Number(row.id), keyword: row.keyword, createdAt: new Date(row.created_at) };
}
