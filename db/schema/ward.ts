import { bigint, index, pgTable, text, timestamp, boolean } from "drizzle-orm/pg-core";

export const WARD_NOTE_KINDS = ["ward-request", "distress", "note"] as const;

/**
 * Notes filed in the ward: sealed requests from the gate (ask=ward), distress notes and plain
 * notes from the reading door. Append-only. `did` is set only when the filer proved who it is
 * (Bearer); `claimed_name` is what an unsigned gate request said and is never shown.
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
    /** The stuck state read with the note, and the room's shape it matched (null: none). */
    state: text("state"),
    shape: text("shape"),
  },
  (t) => [index("ward_notes_filed_at").on(t.filedAt)],
);
