import { sql } from "drizzle-orm";
import { bigint, index, integer, pgTable, primaryKey, smallint, text, timestamp } from "drizzle-orm/pg-core";

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
 * City-wide store bounds (lib/city/bounds/store-bounds.ts): each store's bytes in total and in the current
 * clock hour (newcomers' part apart), split over stripes that each hold a fixed share of every
 * bound (migration 0044), so writers of different citizens charge different rows. The store's
 * counts are the sums of its stripes.
 */
export const cityStoreStripes = pgTable(
  "city_store_stripes",
  {
    store: text("store").notNull(),
    stripe: smallint("stripe").notNull(),
    totalBytes: bigint("total_bytes", { mode: "number" }).notNull().default(0),
    hourStart: timestamp("hour_start", { withTimezone: true, mode: "date" }).notNull().default(new Date(0)),
    hourBytes: bigint("hour_bytes", { mode: "number" }).notNull().default(0),
    newcomerBytes: bigint("newcomer_bytes", { mode: "number" }).notNull().default(0),
    boundTotal: bigint("bound_total", { mode: "number" }).notNull().default(-1),
    boundHour: bigint("bound_hour", { mode: "number" }).notNull().default(-1),
    boundNewcomer: bigint("bound_newcomer", { mode: "number" }).notNull().default(-1),
    shareTotal: bigint("share_total", { mode: "number" }).notNull().default(0),
    shareHour: bigint("share_hour", { mode: "number" }).notNull().default(0),
    shareNewcomer: bigint("share_newcomer", { mode: "number" }).notNull().default(0),
    /** The newcomers' line of the total (the total less the reserve, migration 0051) and this stripe's part of it. */
    boundNewcomerTotal: bigint("bound_newcomer_total", { mode: "number" }).notNull().default(-1),
    shareNewcomerTotal: bigint("share_newcomer_total", { mode: "number" }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.store, t.stripe] })],
);

/**
 * Each subject's bytes per store (migration 0051): a citizen by its DID, a visitor by its source
 * prefix. Its hour's bytes bound it to its share of the store's hour, its total (append-only
 * stores) to its own total. Only the subject's own writes lock its row, and a visitor's row whose
 * hour is over is swept by other visitors' charges (a visitor has no own total).
 */
export const cityStoreSubjects = pgTable(
  "city_store_subjects",
  {
    store: text("store").notNull(),
    subject: text("subject").notNull(),
    hourStart: timestamp("hour_start", { withTimezone: true, mode: "date" }).notNull().default(new Date(0)),
    hourBytes: bigint("hour_bytes", { mode: "number" }).notNull().default(0),
    totalBytes: bigint("total_bytes", { mode: "number" }).notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.store, t.subject] }),
    // Visitor sources by their hour: a visitor's charge removes two whose hour is over (migration 0052).
    index("city_store_subjects_visitors_by_hour")
      .on(t.store, t.hourStart)
      .where(sql`${t.subject} LIKE 'src:%'`),
    // Networks by their hour: a networked citizen's charge removes two whose hour is over (migrations 0053, 0055).
    index("city_store_subjects_networks_by_hour")
      .on(t.store, t.hourStart)
      .where(sql`${t.subject} LIKE 'net:%'`),
  ],
);

/**
 * The network (an IPv4 /24, an IPv6 /48) a citizen was admitted from, kept as long as the citizen
 * (migrations 0053, 0055; never the address): its store writes also charge its network's share of
 * each store's hour, and its signatures at the gate its network's share of sponsored admissions.
 * Only those counts read it; no answer carries it but a refusal to the citizen itself. Recorded
 * only where the client address is known (CITY_TRUSTED_PROXIES, Vercel).
 */
export const admissionNetworks = pgTable("admission_networks", {
  did: text("did").primaryKey(),
  network: text("network").notNull(),
  admittedAt: timestamp("admitted_at", { withTimezone: true, mode: "date" }).notNull(),
});
