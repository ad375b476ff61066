import { sql } from "drizzle-orm";
import { bigint, index, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

/** Lot locks: a hold on a lot of the plat, never a sale. One live holder per lot. */
export const lotLocks = pgTable(
  "lot_locks",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    lot: text("lot").notNull(),
    did: text("did").notNull(),
    lockedAt: timestamp("locked_at", { withTimezone: true, mode: "date" }).notNull(),
    releasedAt: timestamp("released_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    uniqueIndex("lot_locks_one_holder")
      .on(t.lot)
      .where(sql`${t.releasedAt} IS NULL`),
    index("lot_locks_did").on(t.did),
  ],
);
