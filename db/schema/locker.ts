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

/**
 * City-wide store bounds (lib/city/store-bounds.ts): each store's bytes in
 * total and in the current clock hour (newcomers' part apart), moved only by one guarded UPDATE in
 * the write's own transaction, so concurrent instances cannot pass a bound.
 */
export const cityStores = pgTable("city_stores", {
  store: text("store").primaryKey(),
  totalBytes: bigint("total_bytes", { mode: "number" }).notNull().default(0),
  hourStart: timestamp("hour_start", { withTimezone: true, mode: "date" }).notNull().default(new Date(0)),
  hourBytes: bigint("hour_bytes", { mode: "number" }).notNull().default(0),
  newcomerBytes: bigint("newcomer_bytes", { mode: "number" }).notNull().default(0),
});
