import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, uuid } from "drizzle-orm/pg-core";

/**
 * The tables of one transparency log (docs/log.md), made once for each log the city keeps:
 * the residency log and the identity log have the same shapes under their own names, so one module
 * (lib/city/logs/transparency-log) serves both. Constraint and index names follow each table's name.
 */
export interface LogTableNames {
  rows: string;
  nodes: string;
  checkpoints: string;
  cosignatures: string;
  head: string;
  identity: string;
  verifiedHead: string;
  pending: string;
}

export function logTables(names: LogTableNames) {
  /**
   * The log's rows: append-only (triggers in the migrations refuse UPDATE, DELETE, TRUNCATE) and
   * hash-chained, so any edit made with owner rights is still found by the chain's check.
   */
  const rows = pgTable(
    names.rows,
    {
      seq: bigint("seq", { mode: "number" }).primaryKey(),
      event: text("event").notNull(),
      did: text("did").notNull(),
      at: timestamp("at", { withTimezone: true, mode: "date" }).notNull(),
      details: jsonb("details").$type<Record<string, unknown>>().notNull().default({}),
      prevHash: text("prev_hash").notNull(),
      hash: text("hash").notNull().unique(),
      /** The ticket of the pending entry this row integrated (migration 0045): how its writer finds its seq. Not published. */
      ticket: uuid("ticket").unique(),
    },
    (t) => [check(`${names.rows}_seq_positive`, sql`${t.seq} > 0`), index(`${names.rows}_at`).on(t.at), index(`${names.rows}_did`).on(t.did)],
  );

  /**
   * The log's Merkle tree (RFC 9162), kept as it grows so that no proof, root or tile rehashes the
   * log: every perfect subtree's hash (level L, index i covers the leaves [i * 2^L, (i + 1) * 2^L)),
   * hex. Append-only.
   */
  const nodes = pgTable(
    names.nodes,
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
  const checkpoints = pgTable(names.checkpoints, {
    size: bigint("size", { mode: "number" }).primaryKey(),
    root: text("root").notNull(),
    edge: text("edge").notNull(),
    note: text("note").notNull(),
    signedAt: timestamp("signed_at", { withTimezone: true, mode: "date" }).notNull(),
  });

  /** Witness cosignatures (C2SP tlog-cosignature lines) the city verified and keeps. Append-only. */
  const cosignatures = pgTable(
    names.cosignatures,
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
   * that size. Only the integrator locks it (FOR UPDATE SKIP LOCKED: a try-lock, migration 0045),
   * which hands it the latest committed head, so the lock and the head are one read. Kept by
   * triggers on the rows and checkpoints tables in the integrating statement itself (migrations
   * 0023, 0032, 0045), whoever inserts: edge is null until the checkpoint of that size exists. Not
   * append-only: it is the one mutable pointer into the log.
   */
  const head = pgTable(
    names.head,
    {
      id: integer("id").primaryKey().default(1),
      seq: bigint("seq", { mode: "number" }).notNull(),
      hash: text("hash").notNull(),
      at: timestamp("at", { withTimezone: true, mode: "date" }),
      edge: text("edge"),
    },
    (t) => [check(`${names.head}_one_row`, sql`${t.id} = 1`)],
  );

  /**
   * The log's identity (one row, id 1; migrations 0029, 0032): the origin its checkpoints name, the
   * C2SP key name, the Ed25519 public key (base64), its key id (hex) and vkey. Written once, by the
   * first instance whose configured key verifies the tree as it stands; append-only.
   */
  const identity = pgTable(
    names.identity,
    {
      id: integer("id").primaryKey().default(1),
      origin: text("origin").notNull(),
      keyName: text("key_name").notNull(),
      publicKey: text("public_key").notNull(),
      keyId: text("key_id").notNull(),
      vkey: text("vkey").notNull(),
      recordedAt: timestamp("recorded_at", { withTimezone: true, mode: "date" }).notNull(),
    },
    (t) => [check(`${names.identity}_one_row`, sql`${t.id} = 1`)],
  );

  /**
   * The log's verified head: the last row a chain check found intact (one row, id 1). A
   * verification hashes the rows after it, plus one page of the rows before it from a rotating
   * audit cursor (`audit_after`), so each call costs a bounded amount and the whole remembered chain
   * is rehashed again every few calls.
   */
  const verifiedHead = pgTable(
    names.verifiedHead,
    {
      id: integer("id").primaryKey().default(1),
      seq: bigint("seq", { mode: "number" }).notNull(),
      hash: text("hash").notNull(),
      auditAfter: bigint("audit_after", { mode: "number" }).notNull().default(0),
      verifiedAt: timestamp("verified_at", { withTimezone: true, mode: "date" }).notNull(),
    },
    (t) => [check(`${names.verifiedHead}_one_row`, sql`${t.id} = 1`)],
  );

  /**
   * The entries written but not yet integrated (migration 0045): each write's transaction inserts
   * its own row (numbered by a sequence: no row every writer locks); whoever takes the head
   * integrates them in id order and deletes them in the same statement. Never updated (a trigger).
   */
  const pending = pgTable(names.pending, {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    ticket: uuid("ticket").notNull().unique(),
    event: text("event").notNull(),
    did: text("did").notNull(),
    at: timestamp("at", { withTimezone: true, mode: "date" }).notNull(),
    details: jsonb("details").$type<Record<string, unknown>>().notNull().default({}),
  });

  return { rows, nodes, checkpoints, cosignatures, head, identity, verifiedHead, pending };
}

/** The tables of one log, as lib/city/logs/transparency-log reads and writes them. */
export type LogTables = ReturnType<typeof logTables>;
export type LogRow = LogTables["rows"]["$inferSelect"];
