import { sql } from "drizzle-orm";
import { bigint, check, integer, pgTable, primaryKey, smallint, text, timestamp } from "drizzle-orm/pg-core";

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

/**
 * The log's head (one row, id 1): the last row's seq, hash and time and the tree's right edge at
 * that size. An appender locks it FOR UPDATE, which hands it the latest committed head even after
 * waiting (an advisory lock taken in a statement would not refresh that statement's snapshot), so
 * the lock and the head are one read. Kept by triggers on residency_log and log_checkpoints in the
 * appending statement itself (migration 0023), whoever inserts: edge is null until the
 * checkpoint of that size exists. Not append-only: it is the one mutable pointer into the log.
 */
export const logHead = pgTable(
  "log_head",
  {
    id: integer("id").primaryKey().default(1),
    seq: bigint("seq", { mode: "number" }).notNull(),
    hash: text("hash").notNull(),
    at: timestamp("at", { withTimezone: true, mode: "date" }),
    edge: text("edge"),
  },
  (t) => [check("log_head_one_row", sql`${t.id} = 1`)],
);

/**
 * The log's identity (one row, id 1; migration 0029): the origin its checkpoints name, the C2SP key
 * name, the Ed25519 public key (base64), its key id (hex) and vkey. Written once, by the first
 * instance whose configured key verifies the tree as it stands; append-only.
 */
export const logIdentity = pgTable(
  "log_identity",
  {
    id: integer("id").primaryKey().default(1),
    origin: text("origin").notNull(),
    keyName: text("key_name").notNull(),
    publicKey: text("public_key").notNull(),
    keyId: text("key_id").notNull(),
    vkey: text("vkey").notNull(),
    recordedAt: timestamp("recorded_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [check("log_identity_one_row", sql`${t.id} = 1`)],
);
