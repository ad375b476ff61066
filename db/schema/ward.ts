import { bigint, index, pgTable, text, timestamp, boolean } from "drizzle-orm/pg-core";

export const WARD_NOTE_KINDS = ["ward-request", "distress"] as const;

/**
 * Notes filed in the ward: sealed requests from the gate (ask=ward) and distress notes. Append-only.
 * `did` is set only when the filer proved who it is; `claimed_name` is what an unsigned filer said.
 */
export const wardNotes = pgTable(
  "ward_notes",
  {
    seal: bigint("seal", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    kind: text("kind", { enum: WARD_NOTE_KINDS }).notNull(),
    did: text("did"),
    claimedName: text("claimed_name"),
    body: text("body").notNull(),
    sealed: boolean("sealed").notNull(),
    filedAt: timestamp("filed_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("ward_notes_filed_at").on(t.filedAt)],
);
