import { sql } from "drizzle-orm";
import { index, pgSequence, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

/** Gate nonces: 32 hex, valid 600 s, consumed atomically by the POST that carries them. */
export const gateNonces = pgTable(
  "gate_nonces",
  {
    nonce: text("nonce").primaryKey(),
    issuedAt: timestamp("issued_at", { withTimezone: true, mode: "date" }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    consumedAt: timestamp("consumed_at", { withTimezone: true, mode: "date" }),
    /** The citizen a poll issued it to: each holds at most one, a new poll's nonce replaces it. */
    holder: text("holder"),
  },
  (t) => [
    index("gate_nonces_expires_at").on(t.expiresAt),
    uniqueIndex("gate_nonces_holder")
      .on(t.holder)
      .where(sql`${t.holder} IS NOT NULL`),
  ],
);

/** Bed numbers are never reused: a bed id names one assignment for good. */
export const bedNumbers = pgSequence("bed_numbers", { startWith: 1 });

/**
 * Nonces issued per client address in the last hour (GET /gate, CITY_GATE_PER_ADDRESS_PER_HOUR):
 * the issue times still inside the window, at most the limit of them. One row per address,
 * updated by an upsert whose row lock serialises the address's parallel issues.
 */
export const gateNonceQuota = pgTable(
  "gate_nonce_quota",
  {
    address: text("address").primaryKey(),
    issuedAt: timestamp("issued_at", { withTimezone: true, mode: "date" }).array().notNull(),
    lastAt: timestamp("last_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("gate_nonce_quota_last_at").on(t.lastAt)],
);
