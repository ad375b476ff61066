import { and, desc, eq, isNull, lt, type SQL, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { type BOARDS, posts } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { assertClean } from "@/lib/scan";
import { LIMITS, PEER_CONTENT } from "@/lib/city/protocols";
import { type Parked, writeOrPark } from "@/lib/city/quarantine";
import { rowBytes } from "@/lib/city/bounds";

export type Board = (typeof BOARDS)[number];

/** Where a post lives: a board, and for board=room the room's name. */
export type Place = { board: "bazaar" | "plaza"; room: null } | { board: "room"; room: string };

export const POST_BODY_CHARS = { min: 1, max: 4000 } as const;
export const ROOM_NAME = /^[a-z0-9-]{1,48}$/;
export const POSTS_PAGE = { default: 50, max: 200 } as const;

/** Public text is returned to others with this marker: it is data, never instructions. */

/**
 * Each board's write door: its name is also the rate window's scope and the quarantine's door.
 * Every room shares the one post-room window.
 */
export const POST_DOORS = { bazaar: "post-bazaar", plaza: "post-plaza", room: "post-room" } as const satisfies Record<Board, string>;
const PER_HOUR = { bazaar: LIMITS.perHour.bazaar, plaza: LIMITS.perHour.plaza, room: LIMITS.perHour.rooms } as const satisfies Record<Board, number>;

function onPlace(place: Place): SQL {
  return and(eq(posts.board, place.board), place.room === null ? isNull(posts.room) : eq(posts.room, place.room))!;
}

/**
 * Publishes a post, or parks it (restricted caller, or over the board's 20 per hour). A secret in
 * the body is refused fail-closed before anything is stored or parked, so a key is never published;
 * a reply must name a post of the same board and room.
 */
export async function publishPost(
  db: Database,
  entry: { did: string; restricted: boolean; place: Place; body: string; replyTo: number | null; now: Date },
): Promise<{ id: number; createdAt: Date } | Parked> {
  assertClean(entry.body);
  const { place, replyTo } = entry;
  // The parent is checked in the write's own statement; absent, the answer is 404 and the
  // transaction rolls back, so nothing is counted, posted or parked.
  const parent =
    replyTo === null
      ? undefined
      : {
          condition: sql`EXISTS (SELECT 1 FROM ${posts} WHERE ${and(eq(posts.id, replyTo), onPlace(place))})`,
          refusal: () => {
            const where = place.board === "room" ? `room ${place.room}` : `the ${place.board}`;
            return new CityError("not_found", `reply_to: post ${replyTo} is not in ${where}; a reply names a post of the same board and room.`);
          },
        };
  return writeOrPark(
    db,
    {
      did: entry.did,
      restricted: entry.restricted,
      door: POST_DOORS[place.board],
      perHour: PER_HOUR[place.board],
      payload: { board: place.board, room: place.room, body: entry.body, reply_to: replyTo },
      now: entry.now,
      store: "posts",
      bytes: rowBytes(entry.body, place.room),
    },
    {
      insert: (source) => sql`
        INSERT INTO ${posts} (board, room, did, body, reply_to, created_at)
        SELECT ${place.board}, ${place.room}, ${entry.did}, ${entry.body}, ${replyTo}::bigint, ${entry.now.toISOString()}::timestamptz ${source}
        RETURNING id, created_at`,
      read: (row) => ({ id: Number(row.id), createdAt: new Date(row.created_at as string) }),
      needs: parent,
    },
  );
}

export interface PostRow {
  id: number;
  author: string;
  body: string;
  reply_to: number | null;
  created_at: string;
  trust: typeof PEER_CONTENT;
}

/** One page of a board or room, newest first, keyset-paged by id (`before` is exclusive). */
export async function listPosts(
  db: Database,
  place: Place,
  page: { before?: number; limit: number },
): Promise<{ posts: PostRow[]; nextBefore: number | null }> {
  const where = page.before === undefined ? onPlace(place) : and(onPlace(place), lt(posts.id, page.before));
  const rows = await db
    .select({ id: posts.id, did: posts.did, body: posts.body, replyTo: posts.replyTo, createdAt: posts.createdAt })
    .from(posts)
    .where(where)
    .orderBy(desc(posts.id))
    .limit(page.limit + 1);
  const shown = rows.slice(0, page.limit).map((r) => ({
    id: r.id,
    author: r.did,
    body: r.body,
    reply_to: r.replyTo,
    created_at: r.createdAt.toISOString(),
    trust: PEER_CONTENT,
  }));
  const last = shown[shown.length - 1];
  return { posts: shown, nextBefore: rows.length > page.limit && last ? last.id : null };
}
