import { boolean, index, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/**
 * One row per rate window (gate floods, hourly write limits): the moments of the attempts it
 * counts, oldest first. Taken by one upsert (lib/city/rate.ts): ON CONFLICT locks the window's
 * row and sees its latest version, so a limit holds across serverless instances and parallel
 * requests with no lock or count of its own.
 */
export const rateWindows = pgTable(
  "rate_windows",
  {
    scope: text("scope").notNull(),
    subject: text("subject").notNull(),
    /** The counted attempts still in the window (pruned on every take), sorted. */
    ats: timestamp("ats", { withTimezone: true, mode: "date" }).array().notNull(),
    /** When the newest attempt leaves its window: any request may sweep the row after that. */
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    /** Whether the latest take was counted (an upsert answers only the row it leaves). */
    allowed: boolean("allowed").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.subject] }), index("rate_windows_expires_at").on(t.expiresAt)],
);
