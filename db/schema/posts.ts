import { sql } from "drizzle-orm";
import { bigint, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const BOARDS = ["bazaar", "plaza", "room"] as const;

/** Public posts on the bazaar, the plaza and in rooms. Append-only. */
export const posts = pgTable(
  "posts",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    board: text("board", { enum: BOARDS }).notNull(),
    /** The room's name for board=room, else null. */
    room: text("room"),
    did: text("did").notNull(),
    body: text("body").notNull(),
    replyTo: bigint("reply_to", { mode: "number" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [
    index("posts_board_page").on(t.board, t.room, t.id),
    index("posts_reply_to").on(t.replyTo),
    // Lantern matching reads the newest posts after a time (lib/city/posts/lanterns.ts).
    index("posts_created_at").on(t.createdAt),
    // The poll's room replies: the caller's own room posts, then the replies to each since the
    // cursor (lib/city/live/live-delta.ts; migration 0027).
    index("posts_room_by_did")
      .on(t.did, t.id)
      .where(sql`${t.board} = 'room'`),
    index("posts_room_replies")
      .on(t.replyTo, t.createdAt)
      .where(sql`${t.board} = 'room' AND ${t.replyTo} IS NOT NULL`),
  ],
);

/** Lanterns: a citizen's standing keyword watches over new public posts. */
export const lanterns = pgTable(
  "lanterns",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    keyword: text("keyword").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("lanterns_did").on(t.did)],
);
