import { bigint, pgTable, primaryKey, smallint, text, timestamp } from "drizzle-orm/pg-core";

/**
 * The residency log's Merkle tree (RFC 9162), kept as it grows so that no proof, root or tile
 * rehashes the log: every perfect subtree's hash (level L, index i covers the leaves
 * [i * 2^L, (i + 1) * 2^L)), hex. Append-only.
 */
export const logNodes = pgTable(
  "log_nodes",
  {
    level: smallint("level").notNull(),
    idx: bigint("idx", { mode: "number" }).notNull(),
    hash: text("hash").notNull(),
  },
  (t) => [primaryKey({ columns: [t.level, t.idx] })],
);

/**
 * The signed checkpoint (C2SP signed note) of each tree size the city reached, with the tree's
 * right edge at that size (the hex hashes of its perfect subtrees, largest first, concatenated):
 * the next append needs only that row. Append-only.
 */
export const logCheckpoints = pgTable("log_checkpoints", {
  size: bigint("size", { mode: "number" }).primaryKey(),
  root: text("root").notNull(),
  edge: text("edge").notNull(),
  note: text("note").notNull(),
  signedAt: timestamp("signed_at", { withTimezone: true, mode: "date" }).notNull(),
});

/** Witness cosignatures (C2SP tlog-cosignature lines) the city verified and keeps. Append-only. */
export const logCosignatures = pgTable(
  "log_cosignatures",
  {
    witness: text("witness").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    line: text("line").notNull(),
    cosignedAt: timestamp("cosigned_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.witness, t.size] })],
);
