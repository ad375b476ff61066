import { index, pgSequence, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Spent gate nonces. A nonce is checked without a row (its MAC and issue time, lib/city/challenge/nonce-mac.ts)
 * and recorded here only by the statement that spends it: the primary key admits exactly one
 * spender. Kept until no instance could still take it as fresh, then swept.
 */
export const gateNonces = pgTable(
  "gate_nonces",
  {
    nonce: text("nonce").primaryKey(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("gate_nonces_expires_at").on(t.expiresAt)],
);

/** Bed numbers are never reused: a bed id names one assignment for good. */
export const bedNumbers = pgSequence("bed_numbers", { startWith: 1 });

/**
 * GET /gate's quota per client address (CITY_GATE_PER_ADDRESS_PER_HOUR) as one GCRA theoretical
 * arrival time (lib/city/bounds/gcra.ts): an issue moves it on by 3600 / limit seconds, and one that would
 * move it past now + 3600 s is refused. A row whose tat has passed says what no row says: swept.
 */
export const gateNonceQuota = pgTable(
  "gate_nonce_quota",
  {
    address: text("address").primaryKey(),
    tat: timestamp("tat", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("gate_nonce_quota_tat").on(t.tat)],
);
