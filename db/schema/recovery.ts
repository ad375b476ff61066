import { bigint, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Recovery codes (CITY-RECOVER/1): single use, stored as sha256; a new mint voids the old set. */
export const recoveryCodes = pgTable(
  "recovery_codes",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    codeHash: text("code_hash").notNull().unique(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true, mode: "date" }),
    voidedAt: timestamp("voided_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("recovery_codes_did").on(t.did)],
);
