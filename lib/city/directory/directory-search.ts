import { and, asc, eq, getTableColumns, like, not, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { type DirectoryFilters, filterConditions, peerRow, type PeerRow } from "./directory";
import { normalKey } from "./names";
import { LIMITS } from "@/lib/city/protocols";

/** How a citizen matched the text: 0 exact, 1 prefix, 2 substring (of its name or its origin, the better one). */
export type MatchRank = 0 | 1 | 2;

/** Why a search text is refused (a control character, too long), or null when it may be searched. */
export function searchTextProblem(q: string): string | null {
  const { maxChars } = LIMITS.directorySearch;
  if (/\p{Cc}/u.test(q)) return "must not contain control characters";
  if (/[\uD800-\uDFFF]/u.test(q)) return "must be valid Unicode";
  if ([...q].length > maxChars) return `must be at most ${maxChars} characters`;
  return null;
}

/** The text a search compares: the published normal form of what was typed, trimmed as the gate trims names. */
export function searchKey(q: string): string {
  return normalKey(q.trim());
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (ch) => `\\${ch}`);

/**
 * Each rank's condition, exclusive of the better ranks, so a citizen is found once, at its best.
 * Substring matching needs a trigram (3 characters): shorter text matches exactly or as a prefix only.
 */
function rankConditions(key: string): SQL[] {
  const exact = or(eq(citizens.nameKey, key), eq(citizens.originKey, key))!;
  const starts = `${escapeLike(key)}%`;
  const prefix = or(like(citizens.nameKey, starts), like(citizens.originKey, starts))!;
  const conditions = [exact, and(prefix, not(exact))!];
  if ([...key].length >= LIMITS.directorySearch.substringMinChars) {
    const inside = `%${escapeLike(key)}%`;
    conditions.push(and(or(like(citizens.nameKey, inside), like(citizens.originKey, inside)), not(prefix))!);
  }
  return conditions;
}

/**
 * One rank's page as a CTE: its rows in the directory's order, at most `take` (a walk stops there),
 * read only when `roomLeft` holds (a one-time filter above the LIMIT: when false, nothing below starts).
 */
function tierCte(db: Database, rank: MatchRank, where: SQL, take: number, roomLeft: SQL | undefined) {
  const page = db
    .select({ ...getTableColumns(citizens), rank: sql<number>`${sql.raw(String(rank))}::int`.as("rank") })
    .from(citizens)
    .where(where)
    .orderBy(asc(citizens.boundAt), asc(citizens.did))
    .limit(take)
    .as(`page${rank}`);
  return db.$with(`rank${rank}`).as(db.select().from(page).where(roomLeft));
}

type Tier = ReturnType<typeof tierCte>;

interface SearchCursor {
  rank: MatchRank;
  boundAt: Date;
  did: string;
}

/** A search cursor carries the rank of the last row, so the next page resumes inside that rank. */
export function encodeSearchCursor(rank: MatchRank, row: { bound_at: string; fingerprint: string }): string {
  return Buffer.from(`${rank}|${row.bound_at}|${row.fingerprint}`).toString("base64url");
}

function decodeSearchCursor(cursor: string): SearchCursor {
  const [rank = "", at = "", did = "", ...rest] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const boundAt = new Date(at);
  const issuedHere =
    rest.length === 0 &&
    /^[012]$/.test(rank) &&
    /^(?!0000)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(at) &&
    !Number.isNaN(boundAt.getTime()) &&
    boundAt.toISOString() === at &&
    /^[0-9a-f]{64}$/.test(did);
  if (!issuedHere) throw new CityError("bad_request", "cursor: not a cursor this search issued (a listing's cursor pages the listing only).");
  return { rank: Number(rank) as MatchRank, boundAt, did };
}

type SearchOptions = DirectoryFilters & { q: string; limit: number; cursor?: string };

/**
 * The one statement of a search page (null when nothing can match). Each rank is its own keyset
 * query in the directory's order with the page's LIMIT, so the planner may walk
 * `citizens_directory_order` and stop at the page when matches are dense, or take a text index's
 * few matches and sort them when they are rare. The ranks are CTEs read in rank order; a worse
 * rank runs only when the better ones left room on the page (it counts their rows, already read):
 * that gate sits above the rank's LIMIT, so a rank that is not needed starts nothing (not even the
 * parallel workers PostgreSQL may plan for a large city). Exported for EXPLAIN.
 */
export function searchStatement(db: Database, options: SearchOptions) {
  const key = searchKey(options.q);
  if (key === "") return null;
  const after = options.cursor ? decodeSearchCursor(options.cursor) : null;
  const filters = filterConditions(options);
  const take = options.limit + 1;
  const ranks = rankConditions(key)
    .map((condition, rank) => ({ condition, rank: rank as MatchRank }))
    .filter(({ rank }) => !after || rank >= after.rank);
  const tiers: Tier[] = [];
  for (const { condition, rank } of ranks) {
    const where = [...filters, condition];
    if (after && rank === after.rank) {
      // A row comparison, so a walk of the directory order starts at the cursor (an index bound).
      where.push(sql`(${citizens.boundAt}, ${citizens.did}) > (${after.boundAt.toISOString()}::timestamptz, ${after.did})`);
    }
    const found = tiers.map((tier) => sql`(SELECT count(*) FROM ${tier})`);
    const roomLeft = found.length === 0 ? undefined : sql`${sql.join(found, sql` + `)} < ${take}`;
    tiers.push(tierCte(db, rank, and(...where)!, take, roomLeft));
  }
  const [first, ...rest] = tiers;
  if (!first) return null;
  const hits = db.$with("hits").as(rest.reduce((joined, tier) => joined.unionAll(db.select().from(tier)), db.select().from(first).$dynamic()));
  return db
    .with(...tiers, hits)
    .select()
    .from(hits)
    .orderBy(sql`"rank"`, sql`"bound_at"`, sql`"did"`)
    .limit(take);
}

/**
 * Citizens whose name or origin matches `q` in the published normal form, best rank first (exact,
 * then prefix, then substring), ties in the directory's order (bound_at, then DID), one page.
 */
export async function searchPeers(db: Database, options: SearchOptions & { now: Date }): Promise<{ peers: PeerRow[]; nextCursor: string | null }> {
  const statement = searchStatement(db, options);
  const rows = statement ? await statement : [];
  const page = rows.slice(0, options.limit);
  const peers = page.map((r) => peerRow(r, options.now));
  const last = page[page.length - 1];
  const lastPeer = peers[peers.length - 1];
  return {
    peers,
    nextCursor: rows.length > options.limit && last && lastPeer ? encodeSearchCursor(Number(last.rank) as MatchRank, lastPeer) : null,
  };
}
