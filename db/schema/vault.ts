import { bigint, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Vault notes: private, append-only. */
export const vaultNotes = pgTable(
  "vault_notes",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    did: text("did").notNull(),
    content: text("content").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("vault_notes_did").on(t.did, t.id)],
);
