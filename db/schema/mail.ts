import { bigint, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

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
