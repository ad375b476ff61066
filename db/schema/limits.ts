import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, pgTable, primaryKey, smallint, text, timestamp } from "drizzle-orm/pg-core";

/**
 * One row per rate window (gate floods, hourly write limits) and per stripe of a city-wide window:
 * its attempts counted per time bucket, a fixed few counts (lib/city/bounds/rate.ts). Taken by one upsert
 * (or, for a stripe, a guarded UPDATE of the row the statement locked): the row's latest version
 * decides, so a limit holds across serverless instances and parallel requests with no lock or
 * count of its own.
 */
export const rateWindows = pgTable(
  "rate_windows",
  {
    scope: text("scope").notNull(),
    subject: text("subject").notNull(),
    /** The number of the newest bucket (floor(epoch ms / bucket_ms)): counts[1] is its count. */
    bucket: bigint("bucket", { mode: "number" }).notNull(),
    /** The length of a bucket: the window / RATE_BUCKETS. */
    bucketMs: bigint("bucket_ms", { mode: "number" }).notNull(),
    /** Attempts counted per bucket, newest first (RATE_BUCKETS + 1 of them). */
    counts: integer("counts").array().notNull(),
    /** Unused since migration 0043; kept only while lib/city/challenge/gate-nonces.ts still reads it. */
    ats: timestamp("ats", { withTimezone: true, mode: "date" })
      .array()
      .notNull()
      .default(sql`'{}'`),
    /** When the newest counted bucket leaves the window (a stripe: never): any request may sweep the row after that. */
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    /** Whether the latest take was counted (an upsert answers only the row it leaves). */
    allowed: boolean("allowed").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.subject] }), index("rate_windows_expires_at").on(t.expiresAt)],
);

/**
 * The client-keyed rows of rate_windows (the gate's addresses, networks and origins; overflow
 * buckets aside), counted as they come and go by triggers of migration 0056 on one of 16 stripes
 * (the writing transaction's own: city_stripe(), migration 0058): their sum is what the gate's bound on counted subjects reads, not a count of the rows.
 */
export const countedSubjects = pgTable("counted_subjects", {
  stripe: smallint("stripe").primaryKey(),
  n: bigint("n", { mode: "number" }).notNull().default(0),
});
