import { bigint, index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Parked writes: visible to their author, never sealed, never silently dropped. Append-only. */
export const quarantine = pgTable(
  "quarantine",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    door: text("door").notNull(),
    reason: text("reason").notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    parkedAt: timestamp("parked_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("quarantine_did").on(t.did, t.id)],
);
