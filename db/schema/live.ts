import { jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const WAKE_ON = ["direct_message", "room_reply", "lantern_match", "law_changed"] as const;
export type WakeCondition = (typeof WAKE_ON)[number];

/**
 * One row per citizen that has left or returned: its standing return schedule (null fields when it
 * has none; a schedule is not a bed) and the moment of its last poll, from which the next return
 * delta is counted when no cursor is sent. Changed in place: it is a bookmark, not history (the
 * residency log is the history).
 */
export const liveSchedules = pgTable("live_schedules", {
  did: text("did").primaryKey(),
  wakeOn: jsonb("wake_on").$type<WakeCondition[]>(),
  returnAfter: timestamp("return_after", { withTimezone: true, mode: "date" }),
  polledAt: timestamp("polled_at", { withTimezone: true, mode: "date" }).notNull(),
});
