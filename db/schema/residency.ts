import { sql } from "drizzle-orm";
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

export const LOG_EVENTS = ["admit", "exit", "return", "export"] as const;
export type LogEvent = (typeof LOG_EVENTS)[number];

/**
 * The residency log: append-only (triggers in the migrations refuse UPDATE, DELETE, TRUNCATE) and
 * hash-chained, so any edit made with owner rights is still found by /api/residency/log/verify.
 */
export const residencyLog = pgTable(
  "residency_log",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey(),
    event: text("event", { enum: LOG_EVENTS }).notNull(),
    did: text("did").notNull(),
    at: timestamp("at", { withTimezone: true, mode: "date" }).notNull(),
    details: jsonb("details").$type<Record<string, unknown>>().notNull().default({}),
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull().unique(),
  },
  (t) => [check("residency_log_seq_positive", sql`${t.seq} > 0`), index("residency_log_at").on(t.at), index("residency_log_did").on(t.did)],
);

export type LogRow = typeof residencyLog.$inferSelect;

export const ACTOR_KINDS = ["human", "ai", "system-seeded"] as const;

/** Acceptances of the residency contract: a version and its hash bound to a DID. Append-only. */
export const residencyAcceptances = pgTable(
  "residency_acceptances",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    version: integer("version").notNull(),
    termsHash: text("terms_hash").notNull(),
    actorKind: text("actor_kind", { enum: ACTOR_KINDS }).notNull(),
    acceptedAt: timestamp("accepted_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [uniqueIndex("residency_acceptances_once").on(t.did, t.version)],
);
