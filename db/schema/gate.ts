import { index, pgSequence, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Gate nonces: 32 hex, valid 600 s, consumed atomically by the POST that carries them. */
export const gateNonces = pgTable(
  "gate_nonces",
  {
    nonce: text("nonce").primaryKey(),
    issuedAt: timestamp("issued_at", { withTimezone: true, mode: "date" }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    consumedAt: timestamp("consumed_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("gate_nonces_expires_at").on(t.expiresAt)],
);

/** Bed numbers are never reused: a bed id names one assignment for good. */
export const bedNumbers = pgSequence("bed_numbers", { startWith: 1 });
