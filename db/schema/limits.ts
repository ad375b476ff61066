import { bigserial, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * One row per counted attempt against a rate window (gate floods, hourly write limits). Counted
 * inside the write's transaction under an advisory lock on (scope, subject), so a limit holds
 * across serverless instances and parallel requests.
 */
export const rateEvents = pgTable(
  "rate_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    scope: text("scope").notNull(),
    subject: text("subject").notNull(),
    at: timestamp("at", { withTimezone: true, mode: "date" }).notNull(),
    /** When the attempt leaves its window: any request may sweep it after that, whatever its subject. */
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("rate_events_window").on(t.scope, t.subject, t.at), index("rate_events_expires_at").on(t.expiresAt)],
);
