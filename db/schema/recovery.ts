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
/** Which credential asked for the step: a code, a committed next key, the controller key, or the secret. */
export const RECOVERY_VIAS = ["code", "next-key", "controller", "secret"] as const;
/** What the step does once it completes: a recovery gives a new secret; a lower-delay lowers the recovery delay. */
export const RECOVERY_STEPS = ["recovery", "lower-delay"] as const;

/**
 * Steps that wait out a citizen's recovery delay (CITY-KEYS/1): recoveries, and lowerings of the
 * delay itself. Public while open, at most one open per citizen (a partial unique index),
 * completed by the opener's ticket (kept as its sha256) after opens_after. Their history is the
 * identity log; this row is the current state only.
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
    step: text("step", { enum: RECOVERY_STEPS }).notNull().default("recovery"),
    /** A lower-delay step's new delay in hours. */
    lowerTo: smallint("lower_to"),
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
