import { asc, inArray, is, type SQL, sql } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { checkpointOf, edgeOf, growTree, type LogReceipt, type StoredNode, unhex } from "@/lib/tlog/append";
import { inclusionPath } from "@/lib/tlog/storage";
import { type Hash, nodeKey, rangeNodes } from "@/lib/tlog/tree";
import { catchUpTree } from "./catch-up";
import type { LogDescriptor } from "./descriptor";
import { type LogHead, lockLogHead, tryLockLogHead } from "./head";
import { appendSigner } from "./identity";
import { GENESIS_HASH, hashOf, leafDataOf, type PublishedLogRow } from "./row";
import { logStorage } from "./storage";

/**
 * Batched integration (as Tessera and Sunlight do): a write's transaction records its entry as
 * pending (./append.ts) and commits without touching the log's head. After the commit, whoever
 * takes the head (a try-lock: FOR UPDATE SKIP LOCKED) integrates every pending entry in id order,
 * in one transaction of three statements: the head, the pending entries, and one INSERT of their
 * rows (seq, prev_hash chain, hash), the tree's new nodes and ONE signed checkpoint, the pending
 * rows deleted in the same statement. The others find the head taken and poll for their row (one
 * statement a poll, no transaction), at most INTEGRATION_WAIT_MS, then wait for the head themselves. The head's lock is the one serial
 * point left: two instances never fork, since only its holder chains rows to it.
 */

/** The most entries one integration takes (one statement's rows and nodes under one checkpoint); more wait for the next. */
export const INTEGRATION_BATCH_MAX = 256;
/** How long a writer polls for another to integrate its entry before it waits for the head itself (a blocking lock). */
export const INTEGRATION_WAIT_MS = 2000;
/** The longest pause between two polls of a writer whose entry another is integrating (the first pauses are shorter: 2, 4, 8 ms). */
export const INTEGRATION_POLL_MS = 10;
/** The first pause of a waiting writer. */
const FIRST_POLL_MS = 2;
/**
 * A waiting writer tries the head again after this many polls even when the head has not moved
 * (its holder found nothing to integrate, or stalled), so such a holder delays it by about
 * INTEGRATION_RETRY_POLLS * INTEGRATION_POLL_MS, not by INTEGRATION_WAIT_MS.
 */
export const INTEGRATION_RETRY_POLLS = 5;

/**
 * Integrates the log's pending entries (at most INTEGRATION_BATCH_MAX, oldest first) in a
 * transaction of its own: "busy" when another holds the head (unless `wait`), else how many it
 * integrated. A log whose rows predate the tree (imported, or written before it) has its tree built
 * first (catchUpTree). Refuses (log_identity_mismatch) unless this instance signs for the log.
 */
export async function integratePending(log: LogDescriptor, db: Database, now = new Date(), options: { wait?: boolean } = {}): Promise<number | "busy"> {
  const outcome = await integrateBatch(log, db, now, options);
  return typeof outcome === "string" ? outcome : outcome.integrated;
}

/** integratePending, with the receipts of the batch it integrated by ticket (worked out in memory: its integrator's writer reads none back). */
async function integrateBatch(
  log: LogDescriptor,
  db: Database,
  now: Date,
  options: { wait?: boolean },
): Promise<"busy" | { integrated: number; receipts: Map<string, LogReceipt> }> {
  const { pending: table } = log.tables;
  const none = { integrated: 0, receipts: new Map<string, LogReceipt>() };
  const outcome = await db.transaction(async (handle) => {
    const tx = handle as Database;
    const head = options.wait ? await lockLogHead(log, tx) : await tryLockLogHead(log, tx);
    if (!head) return "busy" as const;
    const entries = await tx.select().from(table).orderBy(asc(table.id)).limit(INTEGRATION_BATCH_MAX);
    const treeBehind = head.seq > 0 && head.edge === null;
    if (entries.length === 0 && !treeBehind) return none;
    const signer = await appendSigner(log, tx, now);
    const edge = head.seq === 0 ? "" : (head.edge ?? (await catchUpTree(log, tx, signer, head.seq, now)));
    if (entries.length === 0) return none;
    const rows = chained(head, entries);
    const grown = growTree(
      edgeOf(edge),
      head.seq,
      rows.map(({ row }) => leafDataOf(row)),
    );
    const c = checkpointOf(grown.edge, head.seq + rows.length, signer);
    const values = sql.join(
      rows.map(
        ({ row, ticket, details }) =>
          sql`(${row.seq}::bigint, ${row.event}, ${row.did}, ${row.at}::timestamptz, ${JSON.stringify(details)}::jsonb, ${row.prev_hash}, ${row.hash}, ${ticket}::uuid)`,
      ),
      sql`, `,
    );
    const nodes = sql.join(
      grown.nodes.map((n) => sql`(${n.level}::smallint, ${n.idx}::bigint, ${n.hash})`),
      sql`, `,
    );
    // One statement: the pending entries taken, their rows, the tree's nodes and the batch's checkpoint
    // (the head follows the rows and the checkpoint by trigger: migrations 0023, 0032, 0045).
    await tx.execute(sql`WITH taken AS (DELETE FROM ${table} WHERE ${inArray(
      table.id,
      entries.map((e) => e.id),
    )}),
      integrated AS (INSERT INTO ${log.tables.rows} (seq, event, did, at, details, prev_hash, hash, ticket) VALUES ${values}),
      grown AS (INSERT INTO ${log.tables.nodes} (level, idx, hash) VALUES ${nodes}),
      signed AS (INSERT INTO ${log.tables.checkpoints} (size, root, edge, note, signed_at) VALUES (${c.size}, ${c.root}, ${c.edge}, ${c.note}, ${now.toISOString()}::timestamptz))
      SELECT 1`);
    return { head, edge, rows, nodes: grown.nodes, checkpoint: c };
  });
  if (outcome === "busy" || !("rows" in outcome)) return outcome;
  const receipts = await batchReceipts(outcome);
  // Committed (unless this ran inside a caller's transaction, which may yet roll back): this
  // instance's writers waiting for an entry of the batch take its receipt from here.
  if (!is(db, PgTransaction)) handOut(log, receipts);
  return { integrated: outcome.rows.length, receipts };
}

/**
 * This instance's writers waiting for their entry's integration, by log and ticket: whoever of its
 * requests integrates a batch hands each the receipt the batch worked out (the same receipt a poll
 * would read back: its row's proof in the batch's checkpoint), so a writer whose entry this
 * instance integrated needs no more polls, nor the read of its proof's nodes. An entry another
 * instance integrates is found by the polls, as before.
 */
const waiterHandles = globalThis as unknown as { __cityLogWaiters?: Map<string, (receipt: LogReceipt) => void> };
const waiters = () => (waiterHandles.__cityLogWaiters ??= new Map());
const waiterKey = (log: LogDescriptor, ticket: string) => `${log.name}\n${ticket}`;

function handOut(log: LogDescriptor, receipts: Map<string, LogReceipt>): void {
  for (const [ticket, receipt] of receipts) waiters().get(waiterKey(log, ticket))?.(receipt);
}

/**
 * The receipts of a batch, from what its integration held in memory: the old tree's edge (its
 * maximal perfect subtrees, every left sibling a new leaf's path meets in the old tree) and the
 * nodes the batch completed. Each proof is checked against the batch's root by construction (the
 * same nodes made it); a node not found there would throw, and the receipt is read back instead.
 */
async function batchReceipts(batch: {
  head: LogHead;
  edge: string;
  rows: Array<{ row: PublishedLogRow; ticket: string }>;
  nodes: StoredNode[];
  checkpoint: { size: number; note: string };
}): Promise<Map<string, LogReceipt>> {
  const known = new Map<string, Hash>();
  const old = edgeOf(batch.edge);
  rangeNodes(0, batch.head.seq).forEach((id, i) => known.set(nodeKey(id), old[i]!));
  for (const n of batch.nodes) known.set(nodeKey({ level: n.level, index: n.idx }), unhex(n.hash));
  const inMemory = { readNodes: async () => known };
  const receipts = new Map<string, LogReceipt>();
  for (const { row, ticket } of batch.rows) {
    const size = batch.checkpoint.size;
    const proof = await inclusionPath(inMemory, row.seq, size).catch(() => null);
    if (proof) receipts.set(ticket, { seq: row.seq, leaf_index: row.seq - 1, tree_size: size, proof, checkpoint: batch.checkpoint.note });
  }
  return receipts;
}

type PendingEntry = LogDescriptor["tables"]["pending"]["$inferSelect"];

/**
 * The rows of a batch, each chained to the one before it from the head on. Seq order is time
 * order: an entry recorded at a time before its predecessor's row is stamped with that row's time.
 */
function chained(head: LogHead, entries: PendingEntry[]): Array<{ row: PublishedLogRow; ticket: string; details: Record<string, unknown> }> {
  let prev = { seq: head.seq, hash: head.seq === 0 ? GENESIS_HASH : head.hash, at: head.at };
  return entries.map((entry) => {
    const at = prev.at && prev.at > entry.at ? prev.at : entry.at;
    const details = entry.details as Record<string, string | number | boolean | null>;
    const body = { seq: prev.seq + 1, event: entry.event, did: entry.did, at: at.toISOString(), ...details, prev_hash: prev.hash };
    const row: PublishedLogRow = { ...body, hash: hashOf(body) };
    prev = { seq: row.seq, hash: row.hash, at };
    return { row, ticket: entry.ticket, details };
  });
}

type Found = { seq: number | string; size: number | string; note: string };

/** An integrated row's seq with its batch's checkpoint (the smallest that covers it), as SQL over the row `l`. */
function coveringCheckpoint(log: LogDescriptor): SQL {
  return sql`SELECT size, note FROM ${log.tables.checkpoints} c WHERE c.size >= l.seq ORDER BY c.size LIMIT 1`;
}

/** The receipt of a found row: its inclusion proof in its batch's checkpoint, read from the log's nodes (one statement). */
async function receiptOf(log: LogDescriptor, db: Database, found: Found): Promise<LogReceipt> {
  const seq = Number(found.seq);
  const size = Number(found.size);
  const proof = await inclusionPath(logStorage(log, db), seq, size);
  return { seq, leaf_index: seq - 1, tree_size: size, proof, checkpoint: found.note };
}

/**
 * The receipt of an integrated entry, found by its ticket: its row's inclusion proof in the signed
 * checkpoint of its batch (the smallest checkpoint that covers it); null while it is pending.
 */
export async function integratedReceipt(log: LogDescriptor, db: Database, ticket: string): Promise<LogReceipt | null> {
  const [found] = rowsOf<Found>(
    await db.execute(
      sql`SELECT l.seq, c.size, c.note FROM ${log.tables.rows} l CROSS JOIN LATERAL (${coveringCheckpoint(log)}) c WHERE l.ticket = ${ticket}::uuid`,
    ),
  );
  return found ? receiptOf(log, db, found) : null;
}

/**
 * One poll of a waiting writer, one statement on two unique indexes and no lock: the head's seq as
 * committed now, and its entry's row and checkpoint once integrated.
 */
async function pollIntegration(log: LogDescriptor, db: Database, ticket: string): Promise<{ head: number; found: Found | null }> {
  const [row] = rowsOf<{ head: number | string; seq: number | string | null; size: number | string | null; note: string | null }>(
    await db.execute(sql`SELECT h.seq AS head, f.seq, f.size, f.note FROM ${log.tables.head} h
      LEFT JOIN LATERAL (SELECT l.seq, c.size, c.note FROM ${log.tables.rows} l CROSS JOIN LATERAL (${coveringCheckpoint(log)}) c
        WHERE l.ticket = ${ticket}::uuid) f ON true
      WHERE h.id = 1`),
  );
  const found = row && row.seq !== null && row.size !== null && row.note !== null ? { seq: row.seq, size: row.size, note: row.note } : null;
  return { head: Number(row?.head ?? 0), found };
}

/**
 * After the write that recorded it committed: integrates the entry (with every other pending one)
 * or waits for whoever holds the head to, and gives its receipt. A writer that finds the head taken
 * polls (pollIntegration: one statement, no transaction) after 2, 4, 8, then every
 * INTEGRATION_POLL_MS ms, until its row is there. It tries the head again only when a poll sees the
 * head moved without its entry (the holder's batch was read before this entry committed) or after
 * INTEGRATION_RETRY_POLLS polls without a move; past INTEGRATION_WAIT_MS it waits for the head
 * itself (then integrates whatever is left, its own entry included), so a crashed integrator
 * delays it at most that long. When a request of this instance integrates the entry, it hands the
 * writer its receipt (handOut): the writer stops waiting then, with no more statements.
 */
export async function awaitIntegration(log: LogDescriptor, db: Database, ticket: string, now = new Date()): Promise<LogReceipt> {
  const key = waiterKey(log, ticket);
  const handed: { receipt: LogReceipt | null; wake: (() => void) | null } = { receipt: null, wake: null };
  waiters().set(key, (receipt: LogReceipt) => {
    handed.receipt = receipt;
    handed.wake?.();
  });
  // A pause between polls that ends at once when this instance hands the receipt over.
  const pauseOrHanded = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      handed.wake = () => (clearTimeout(timer), resolve());
    }).finally(() => (handed.wake = null));
  try {
    const deadline = Date.now() + INTEGRATION_WAIT_MS;
    for (;;) {
      if (handed.receipt) return handed.receipt;
      const outcome = await integrateBatch(log, db, now, { wait: Date.now() >= deadline });
      if (outcome !== "busy") {
        const mine = outcome.receipts.get(ticket);
        if (mine) return mine;
        // Held the head and this entry was not pending: integrated before, or never committed.
        const receipt = await integratedReceipt(log, db, ticket);
        if (receipt) return receipt;
        if (outcome.integrated === 0) throw new Error(`the ${log.name} holds no entry with this ticket, pending or integrated`);
        continue; // More were pending than one batch takes: the next batch.
      }
      let seen: number | null = null;
      for (let polls = 1, wait = FIRST_POLL_MS; ; polls++, wait = Math.min(wait * 2, INTEGRATION_POLL_MS)) {
        await pauseOrHanded(wait);
        if (handed.receipt) return handed.receipt;
        const { head, found } = await pollIntegration(log, db, ticket);
        if (handed.receipt) return handed.receipt;
        if (found) return receiptOf(log, db, found);
        if ((seen !== null && head !== seen) || polls >= INTEGRATION_RETRY_POLLS || Date.now() >= deadline) break;
        seen = head;
      }
    }
  } finally {
    waiters().delete(key);
  }
}
