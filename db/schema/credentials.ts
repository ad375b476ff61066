import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { citizens } from "./citizens";

/** Gate session tokens (`city_st_`): expiring, revocable, stored only as sha256. */
export const sessionTokens = pgTable(
  "session_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    did: text("did")
      .notNull()
      .references(() => citizens.did),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("session_tokens_did").on(t.did)],
);
