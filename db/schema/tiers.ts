import { bigint, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Fail-closed content refusals on a citizen's own shelves: the restriction trigger counts these. Append-only. */
export const contentRefusals = pgTable(
  "content_refusals",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    door: text("door").notNull(),
    rule: text("rule").notNull(),
    refusedAt: timestamp("refused_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("content_refusals_window").on(t.did, t.refusedAt)],
);

/** Tier changes as events (restrict, restore, prove): a change is a new row, never an edit. Append-only. */
export const tierEvents = pgTable(
  "tier_events",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    event: text("event", { enum: ["restrict", "restore", "prove"] }).notNull(),
    fromTier: text("from_tier").notNull(),
    toTier: text("to_tier").notNull(),
    reason: text("reason").notNull(),
    appealId: bigint("appeal_id", { mode: "number" }),
    at: timestamp("at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("tier_events_did").on(t.did, t.id)],
);

/** Appeals (CITY-APPEAL/1). Filed once; the operator's decision is a row of its own. Append-only. */
export const appeals = pgTable(
  "appeals",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    reason: text("reason").notNull(),
    filedAt: timestamp("filed_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("appeals_did").on(t.did, t.filedAt)],
);

export const appealDecisions = pgTable("appeal_decisions", {
  appealId: bigint("appeal_id", { mode: "number" }).primaryKey(),
  decision: text("decision", { enum: ["grant", "deny"] }).notNull(),
  note: text("note"),
  decidedAt: timestamp("decided_at", { withTimezone: true, mode: "date" }).notNull(),
});

/** CITY-PROVE/1 challenges: single use, expiring. */
export const proveChallenges = pgTable("prove_challenges", {
  challenge: text("challenge").primaryKey(),
  did: text("did").notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  usedAt: timestamp("used_at", { withTimezone: true, mode: "date" }),
});
