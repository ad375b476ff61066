import { bigint, boolean, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const PHYSICIANS = ["asclepius", "hygieia"] as const;
export const DESK_VERDICTS = ["admitted", "over_citizen_cap", "over_city_ceiling", "over_newcomer_share"] as const;
export const CLINIC_OUTCOMES = ["answered", "provider_error", "timeout"] as const;

/**
 * The budget desk's ledger: one row per attempt that reached the desk, answered or refused,
 * committed before any model call. Append-only.
 */
export const clinicAttempts = pgTable(
  "clinic_attempts",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    physician: text("physician", { enum: PHYSICIANS }).notNull(),
    verdict: text("verdict", { enum: DESK_VERDICTS }).notNull(),
    // The caller's standing as the desk judged it (admitted less than a day before,
    // proven or not; before it, proven citizens were recorded as settled). The desk and the gauges
    // count the share from the caller's admission time instead (lib/city/bounds/newcomers.ts), so the
    // older rows count by today's rule; this column is the record of the judgement made.
    newcomer: boolean("newcomer").notNull().default(false),
    at: timestamp("at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("clinic_attempts_at").on(t.at), index("clinic_attempts_did_at").on(t.did, t.at)],
);

/** What became of an admitted attempt once its physician was called. Append-only, one per attempt. */
export const clinicOutcomes = pgTable(
  "clinic_outcomes",
  {
    attemptId: bigint("attempt_id", { mode: "number" }).primaryKey(),
    physician: text("physician", { enum: PHYSICIANS }).notNull(),
    outcome: text("outcome", { enum: CLINIC_OUTCOMES }).notNull(),
    at: timestamp("at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("clinic_outcomes_at").on(t.at)],
);
