import { sql } from "drizzle-orm";
import { bigint, check, index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Mail between citizens, by DID. Only `read_at` ever changes. */
export const messages = pgTable(
  "messages",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    fromDid: text("from_did").notNull(),
    toDid: text("to_did").notNull(),
    body: text("body").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
    readAt: timestamp("read_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("messages_inbox").on(t.toDid, t.readAt, t.id)],
);

/**
 * Each inbox's unread count, kept by statement-level triggers on `messages` in the same transaction
 * as the mail that moves it (migration 0019): the return delta reads one row, however many wait.
 */
export const inboxCounts = pgTable(
  "inbox_counts",
  {
    did: text("did").primaryKey(),
    unread: integer("unread").notNull(),
  },
  (t) => [check("inbox_counts_unread_not_negative", sql`${t.unread} >= 0`)],
);
