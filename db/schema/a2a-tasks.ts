import { index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Tasks of the A2A bridge, readable only by their creator (owner_hash: sha256 of the caller's DID),
 * kept for the published retention and then swept. Credentials in them are redacted before storing.
 */
export const a2aTasks = pgTable(
  "a2a_tasks",
  {
    id: text("id").primaryKey(),
    ownerHash: text("owner_hash").notNull(),
    task: jsonb("task").$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
    /** The task's bytes as stored (pg_column_size of its jsonb): what it counts in the city-wide bound. */
    bytes: integer("bytes").notNull().default(0),
  },
  (t) => [index("a2a_tasks_created_at").on(t.createdAt), index("a2a_tasks_owner").on(t.ownerHash, t.createdAt)],
);
