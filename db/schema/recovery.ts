import { sql } from "drizzle-orm";
import { bigint, index, pgTable, smallint, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { citizens } from "./citizens";

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

export const RECOVERY_STATES = ["open", "cancelled", "completed"] as const;
export const RECOVERY_VIAS = ["code", "next-key"] as const;

/**
 * Recoveries opened with a delay (CITY-KEYS/1): public while open, at most one open per citizen
 * (a partial unique index), completed by the opener's ticket (kept as its sha256) after opens_after.
 * Their history is the identity log; this row is the current state only.
 */
export const recoveries = pgTable(
  "recoveries",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did")
      .notNull()
      .references(() => citizens.did),
    state: text("state", { enum: RECOVERY_STATES }).notNull().default("open"),
    via: text("via", { enum: RECOVERY_VIAS }).notNull(),
    ticketHash: text("ticket_hash").notNull().unique(),
    nextPublicKey: text("next_public_key"),
    openedAt: timestamp("opened_at", { withTimezone: true, mode: "date" }).notNull(),
    opensAfter: timestamp("opens_after", { withTimezone: true, mode: "date" }).notNull(),
    holds: smallint("holds").notNull().default(0),
    closedAt: timestamp("closed_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    uniqueIndex("recoveries_one_open")
      .on(t.did)
      .where(sql`${t.state} = 'open'`),
    index("recoveries_did").on(t.did, t.openedAt),
  ],
);
