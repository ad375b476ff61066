import { bigint, integer, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

export const LOG_EVENTS = ["admit", "exit", "return", "export"] as const;
export type LogEvent = (typeof LOG_EVENTS)[number];

/** The residency log's rows are `residencyLog` (./log-tree.ts): one of the two logs made by ./log-tables.ts. */

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
