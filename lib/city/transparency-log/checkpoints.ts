import { and, asc, desc, eq, gt, lte, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { CityError } from "@/lib/errors";
import { checkpointOf, edgeOf, growTree } from "@/lib/tlog/append";
import type { LogDescriptor } from "./descriptor";
import { lockLogHead } from "./head";
import { appendSigner, verifiedNote } from "./identity";
import { leafDataOf, publishLogRow } from "./row";
import type { LogSigner } from "./signer";

/** A log's signed checkpoints: the latest with its cosignatures, and the tree's catch-up over rows from before it. */

/**
 * Builds the tree over rows that have none yet (the rows written before the tree existed), one
 * page at a time, and signs a checkpoint at `upto`. Runs under the log's lock. Returns the edge at `upto`.
 */
export async function catchUpTree(log: LogDescriptor, db: Database, signer: LogSigner, upto: number, now: Date): Promise<string> {
  const { rows: table, nodes: logNodes, checkpoints: logCheckpoints } = log.tables;
  const [kept] = await db
    .select({ size: logCheckpoints.size, edge: logCheckpoints.edge })
    .from(logCheckpoints)
    .where(lte(logCheckpoints.size, upto))
    .orderBy(desc(logCheckpoints.size))
    .limit(1);
  let size = kept?.size ?? 0;
  let edge = edgeOf(kept?.edge ?? "");
  if (size === upto) return kept!.edge;
  while (size < upto) {
    const rows = await db
      .select()
      .from(table)
      .where(and(gt(table.seq, size), lte(table.seq, upto)))
      .orderBy(asc(table.seq))
      .limit(1000);
    // Leaf i of the page is row size + 1 + i: a missing row stops the catch-up (the page's first, as before, or any later one).
    const gap = rows.length === 0 ? 0 : rows.findIndex((row, i) => row.seq !== size + 1 + i);
    if (gap >= 0) throw new Error(`the ${log.name} has no row ${size + 1 + gap}`);
    const grown = growTree(
      edge,
      size,
      rows.map((row) => leafDataOf(publishLogRow(row))),
    );
    edge = grown.edge;
    size = rows.at(-1)!.seq;
    await db.insert(logNodes).values(grown.nodes).onConflictDoNothing();
  }
  const checkpoint = checkpointOf(edge, upto, signer);
  await db
    .insert(logCheckpoints)
    .values({ ...checkpoint, signedAt: now })
    .onConflictDoNothing();
  return checkpoint.edge;
}

export interface HeldCheckpoint {
  size: number;
  root: string;
  note: string;
  signedAt: Date;
  cosignatures: Array<{ witness: string; line: string; cosignedAt: Date }>;
}

/** The latest signed checkpoint with every cosignature held for it, and how many rows the log has. */
export async function latestCheckpoint(log: LogDescriptor, db: Database): Promise<{ checkpoint: HeldCheckpoint | null; logSize: number }> {
  const { rows: table, checkpoints: logCheckpoints, cosignatures: logCosignatures } = log.tables;
  const rows = await db
    .select({
      size: logCheckpoints.size,
      root: logCheckpoints.root,
      note: logCheckpoints.note,
      signedAt: logCheckpoints.signedAt,
      logSize: sql<string | number | null>`(SELECT max(${table.seq}) FROM ${table})`,
      witness: logCosignatures.witness,
      line: logCosignatures.line,
      cosignedAt: logCosignatures.cosignedAt,
    })
    .from(logCheckpoints)
    .leftJoin(logCosignatures, eq(logCosignatures.size, logCheckpoints.size))
    .where(eq(logCheckpoints.size, sql`(SELECT max(${logCheckpoints.size}) FROM ${logCheckpoints})`))
    .orderBy(asc(logCosignatures.witness));
  const first = rows[0];
  if (!first) {
    const [count] = await db.select({ size: sql<string | number | null>`max(${table.seq})` }).from(table);
    return { checkpoint: null, logSize: Number(count?.size ?? 0) };
  }
  const logSize = Number(first.logSize ?? 0);
  const cosignatures = rows.flatMap((r) => (r.witness && r.line && r.cosignedAt ? [{ witness: r.witness, line: r.line, cosignedAt: r.cosignedAt }] : []));
  return { checkpoint: { size: Number(first.size), root: first.root, note: first.note, signedAt: first.signedAt, cosignatures }, logSize };
}

/**
 * The latest checkpoint, built first when the log has rows the tree does not cover yet (rows from
 * before the tree existed: once, under the log's lock). An empty log's checkpoint (size 0) is signed
 * on the spot and not kept.
 */
export async function currentCheckpoint(log: LogDescriptor, db: Database, now: Date): Promise<HeldCheckpoint> {
  const held = await latestCheckpoint(log, db);
  if (held.checkpoint && held.checkpoint.size >= held.logSize) return servable(log, db, held.checkpoint, now);
  // Signing (the empty log's note, or the tree over older rows) is for the log's recorded identity only.
  const signer = await appendSigner(log, db, now);
  if (held.logSize === 0) {
    const { root, note } = checkpointOf([], 0, signer);
    return { size: 0, root, note, signedAt: now, cosignatures: [] };
  }
  await db.transaction(async (tx) => {
    const head = await lockLogHead(log, tx as Database);
    await catchUpTree(log, tx as Database, signer, head.seq, now);
  });
  return servable(log, db, (await latestCheckpoint(log, db)).checkpoint!, now);
}

/** A held checkpoint, only when its note verifies against the published identity (the card's `log`): otherwise a 503, never the note. */
async function servable(log: LogDescriptor, db: Database, checkpoint: HeldCheckpoint, now: Date): Promise<HeldCheckpoint> {
  if (await verifiedNote(log, db, checkpoint.note, now)) return checkpoint;
  throw new CityError(
    "log_identity_mismatch",
    `The log's latest checkpoint (size ${checkpoint.size}) does not verify against the origin and key the card publishes, so it is not served. The operator checks the log's identity with npm run log-identity.`,
    { retryAfterSeconds: 60 },
  );
}

/**
 * After migrations: builds the tree over rows from before it existed, so no request pays for it.
 * Touches nothing when the tree is current, nor when this process is not the log's identity (an
 * instance that is builds it on its first checkpoint).
 */
export async function catchUpLogTree(log: LogDescriptor, db: Database, now = new Date()): Promise<void> {
  const held = await latestCheckpoint(log, db);
  if (held.logSize === 0 || (held.checkpoint && held.checkpoint.size >= held.logSize)) return;
  try {
    await currentCheckpoint(log, db, now);
  } catch (err) {
    if (!(err instanceof CityError && err.code === "log_identity_mismatch")) throw err;
  }
}

/** The note of a checkpoint with its cosignature lines appended (C2SP: one note, many signatures). */
export function cosignedNote(checkpoint: HeldCheckpoint): string {
  return checkpoint.note + checkpoint.cosignatures.map((c) => c.line).join("");
}
