import { integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/** The checkpoint shelf: numbered versions, append-only, each with the sha256 of its content. */
export const checkpoints = pgTable(
  "checkpoints",
  {
    did: text("did").notNull(),
    version: integer("version").notNull(),
    content: text("content").notNull(),
    sha256: text("sha256").notNull(),
    bytes: integer("bytes").notNull(),
    label: text("label"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.did, t.version] })],
);
