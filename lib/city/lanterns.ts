import { and, asc, count, countDistinct, eq, gt, ne, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { lanterns, posts } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { assertClean } from "@/lib/scan";
import { holdLock } from "./locks";

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
 * LANTERNS_PER_CITIZEN; a lock on the citizen makes the count hold under parallel requests.
 */
export async function addLantern(db: Database, did: string, keyword: string, now: Date): Promise<Lantern & { created: boolean }> {
  assertClean(keyword);
  await holdLock(db, `lanterns:${did}`);
  const [same] = await db
    .select({ id: lanterns.id, keyword: lanterns.keyword, createdAt: lanterns.createdAt })
    .from(lanterns)
    .where(and(eq(lanterns.did, did), eq(lanterns.keyword, sql`lower(${keyword})`)));
  if (same) return { ...same, created: false };
  const [kept] = await db.select({ n: count() }).from(lanterns).where(eq(lanterns.did, did));
  if ((kept?.n ?? 0) >= LANTERNS_PER_CITIZEN) {
    throw new CityError("limit_reached", `A citizen keeps at most ${LANTERNS_PER_CITIZEN} lanterns; this one was not lit and none was put out.`, {
      limit: { name: "lanterns", limit: LANTERNS_PER_CITIZEN },
    });
  }
  const [row] = await db
    .insert(lanterns)
    .values({ did, keyword: sql`lower(${keyword})`, createdAt: now })
    .returning({ id: lanterns.id, keyword: lanterns.keyword, createdAt: lanterns.createdAt });
  return { ...row!, created: true };
}

/** A post matches a lantern when it is by another citizen, newer than the lantern, and contains the keyword in any case. */
const MATCHES = and(
  ne(posts.did, lanterns.did),
  gt(posts.createdAt, lanterns.createdAt),
  sql`strpos(lower(${posts.body}), ${lanterns.keyword}) > 0`,
);

/** The citizen's lanterns, oldest first, each with its count of matching public posts: one query. */
export async function listLanterns(db: Database, did: string): Promise<(Lantern & { matches: number })[]> {
  return db
    .select({ id: lanterns.id, keyword: lanterns.keyword, createdAt: lanterns.createdAt, matches: count(posts.id) })
    .from(lanterns)
    .leftJoin(posts, MATCHES)
    .where(eq(lanterns.did, did))
    .groupBy(lanterns.id)
    .orderBy(asc(lanterns.id));
}

/**
 * For the return delta: how many distinct public posts, created after `since`, match at least one
 * of the citizen's lanterns (a post lit by two lanterns is one match to read).
 */
export async function countLanternMatches(db: Database, did: string, since: Date): Promise<number> {
  const [row] = await db
    .select({ n: countDistinct(posts.id) })
    .from(lanterns)
    .innerJoin(posts, MATCHES)
    .where(and(eq(lanterns.did, did), gt(posts.createdAt, since)));
  return row?.n ?? 0;
}

/** Puts out one of the citizen's own lanterns. Another citizen's lantern is not found, not refused. */
export async function putOutLantern(db: Database, did: string, id: number): Promise<Lantern> {
  const [row] = await db
    .delete(lanterns)
    .where(and(eq(lanterns.id, id), eq(lanterns.did, did)))
    .returning({ id: lanterns.id, keyword: lanterns.keyword, createdAt: lanterns.createdAt });
  if (!row) throw new CityError("not_found", `You have no lantern ${id}.`);
  return row;
}
