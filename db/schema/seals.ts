import { pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/** Seals: a sha256 of a citizen's memory. Append-only; a seal outlives the stay. */
export const seals = pgTable(
  "seals",
  {
    sha256: text("sha256").notNull(),
    did: text("did").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.sha256, t.did] })],
);
