import { check, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";

/**
 * The city's Ed25519 signing key when CITY_SIGNING_KEY is unset: one row (slot 1), generated once
 * and inserted with ON CONFLICT DO NOTHING, so every instance signs with the same key.
 */
export const signingKeys = pgTable(
  "signing_keys",
  {
    slot: integer("slot").primaryKey(),
    kid: text("kid").notNull(),
    privateJwk: jsonb("private_jwk").$type<Record<string, string>>().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [check("signing_keys_one_slot", sql`${t.slot} = 1`)],
);
