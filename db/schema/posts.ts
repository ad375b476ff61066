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
    // Lantern matching reads the newest posts after a time (lib/city/lanterns.ts).
    index("posts_created_at").on(t.createdAt),
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
