import { bigint, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/** Locker bags: a citizen's named, overwritable storage. */
export const lockerBags = pgTable(
  "locker_bags",
  {
    did: text("did").notNull(),
    bag: text("bag").notNull(),
    content: text("content").notNull(),
    bytes: integer("bytes").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.did, t.bag] })],
);

/**
 * City-wide running totals, changed only with a guarded UPDATE in the write's transaction (the row
 * lock serialises writers), so a bound such as the locker's city-wide bytes can never be passed.
 */
export const cityCounters = pgTable("city_counters", {
  name: text("name").primaryKey(),
  value: bigint("value", { mode: "number" }).notNull(),
});
