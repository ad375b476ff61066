import { and, asc, eq, getTableColumns, gt, like, not, or, type SQL, sql, type SQLWrapper } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { type DirectoryFilters, filterConditions, peerRow, type PeerRow } from "./directory";
import { normalKey } from "./names";
import { LIMITS } from "./protocols";

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

type Tier = ReturnType<typeof tierQuery>;
/** The few calls made on UNION ALL of the tiers (drizzle's set-operator types do not chain generically). */
interface Joined extends PromiseLike<Awaited<Tier>>, SQLWrapper {
  unionAll(tier: Joined): Joined;
  orderBy(...by: SQL[]): Joined;
  limit(n: number): Joined;
}

/** One rank's page: its rows in the directory's order, at most `take`. */
function tierQuery(db: Database, rank: MatchRank, where: SQL[], take: number) {
  return db
    .select({ ...getTableColumns(citizens), rank: sql<number>`${sql.raw(String(rank))}::int`.as("rank") })
    .from(citizens)
    .where(and(...where))
    .orderBy(asc(citizens.boundAt), asc(citizens.did))
    .limit(take)
    .$dynamic();
}

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
 * The one statement of a search page (null when nothing can match): each rank is its own keyset
 * query (an index walk that stops at the page), joined by UNION ALL. Exported for EXPLAIN.
 */
export function searchStatement(db: Database, options: SearchOptions): Joined | null {
  const key = searchKey(options.q);
  if (key === "") return null;
  const after = options.cursor ? decodeSearchCursor(options.cursor) : null;
  const filters = filterConditions(options);
  const take = options.limit + 1;
  const wanted = rankConditions(key)
    .map((condition, rank) => ({ condition, rank: rank as MatchRank }))
    .filter(({ rank }) => !after || rank >= after.rank)
    .map(({ condition, rank }) => {
      const where = [...filters, condition];
      if (after && rank === after.rank) {
        where.push(or(gt(citizens.boundAt, after.boundAt), and(eq(citizens.boundAt, after.boundAt), gt(citizens.did, after.did)))!);
      }
      return { rank, where: and(...where)! };
    });
  const tiers = wanted.map(({ rank, where }, i) => {
    const better = wanted.slice(0, i).map((tier) => tier.where);
    // A worse rank runs only when the better ones leave room on the page: a one-time filter, so
    // text that is inside every name but at its start (a prefix of all) never scans the city.
    const gate = better.length === 0 ? [] : [sql`(SELECT count(*) FROM (SELECT 1 FROM ${citizens} WHERE ${or(...better)} LIMIT ${take}) AS better) < ${take}`];
    return tierQuery(db, rank, [where, ...gate], take) as unknown as Joined;
  });
  const [first, ...rest] = tiers;
  if (!first) return null;
  if (rest.length === 0) return first;
  return rest
    .reduce((joined, tier) => joined.unionAll(tier), first)
    .orderBy(sql`"rank"`, sql`"bound_at"`, sql`"did"`)
    .limit(options.limit + 1);
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
