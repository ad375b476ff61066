import { asc, eq, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { CityError } from "@/lib/errors";
import { checkpointOf } from "@/lib/tlog/append";
import type { LogDescriptor } from "./descriptor";
import { appendSigner, verifiedNote } from "./identity";
import { catchUpTree } from "./catch-up";
import { lockLogHead } from "./head";
import { integratePending } from "./integrate";

/** A log's signed checkpoints: the latest with its cosignatures (the tree's catch-up over rows from before it: ./catch-up.ts). */

export interface HeldCheckpoint {
  size: number;
  root: string;
  note: string;
  signedAt: Date;
  cosignatures: Array<{ witness: string; line: string; cosignedAt: Date }>;
}

/** The latest signed checkpoint with every cosignature held for it, how many rows the log has, and whether entries wait for integration. */
export async function latestCheckpoint(log: LogDescriptor, db: Database): Promise<{ checkpoint: HeldCheckpoint | null; logSize: number; pending: boolean }> {
  const { rows: table, checkpoints: logCheckpoints, cosignatures: logCosignatures, pending: waiting } = log.tables;
  const rows = await db
    .select({
      size: logCheckpoints.size,
      root: logCheckpoints.root,
      note: logCheckpoints.note,
      signedAt: logCheckpoints.signedAt,
      logSize: sql<string | number | null>`(SELECT max(${table.seq}) FROM ${table})`,
      pending: sql<boolean>`EXISTS (SELECT 1 FROM ${waiting})`,
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
    const [count] = await db
      .select({ size: sql<string | number | null>`max(${table.seq})`, pending: sql<boolean>`EXISTS (SELECT 1 FROM ${waiting})` })
      .from(table);
    return { checkpoint: null, logSize: Number(count?.size ?? 0), pending: count?.pending === true };
  }
  const logSize = Number(first.logSize ?? 0);
  const cosignatures = rows.flatMap((r) => (r.witness && r.line && r.cosignedAt ? [{ witness: r.witness, line: r.line, cosignedAt: r.cosignedAt }] : []));
  return {
    checkpoint: { size: Number(first.size), root: first.root, note: first.note, signedAt: first.signedAt, cosignatures },
    logSize,
    pending: first.pending === true,
  };
}

/**
 * The latest checkpoint, after integrating entries left pending (a writer that crashed between its
 * commit and their integration: whoever reads the checkpoint integrates them, as the next writer
 * would), and built first when the log has rows the tree does not cover yet (rows from before the
 * tree existed: once, under the head's lock). An empty log's checkpoint (size 0) is signed on the
 * spot and not kept.
 */
export async function currentCheckpoint(log: LogDescriptor, db: Database, now: Date): Promise<HeldCheckpoint> {
  let held = await latestCheckpoint(log, db);
  if (held.pending && (await integrateLeftovers(log, db, now))) held = await latestCheckpoint(log, db);
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

/** Integrates what is pending unless another holds the head (it is integrating) or this instance does not sign for the log. */
async function integrateLeftovers(log: LogDescriptor, db: Database, now: Date): Promise<boolean> {
  try {
    return (await integratePending(log, db, now)) !== "busy";
  } catch (err) {
    if (!(err instanceof CityError && err.code === "log_identity_mismatch")) throw err;
    return false;
  }
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
 * After migrations (and at start): builds the tree over rows from before it existed and integrates
 * entries left pending, so no request pays for it. Touches nothing when the tree is current and
 * nothing is pending, nor when this process is not the log's identity (an
 * instance that is builds it on its first checkpoint).
 */
export async function catchUpLogTree(log: LogDescriptor, db: Database, now = new Date()): Promise<void> {
  const held = await latestCheckpoint(log, db);
  const current = held.logSize === 0 || (held.checkpoint && held.checkpoint.size >= held.logSize);
  if (current && !held.pending) return;
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
