import canonicalize from "canonicalize";
import { and, asc, desc, eq, gt, lte, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { logCheckpoints, logCosignatures, logNodes, residencyLog } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { b64, signCheckpoint } from "./log-note";
import { appendSigner, verifiedNote } from "./log-identity";
import type { LogSigner } from "./log-signer";
import { TILE_WIDTH } from "./log-tiles";
import { appendLeaf, consistencyRanges, EMPTY_ROOT, type Hash, inclusionRanges, leafHash, type NodeId, nodeKey, nodesOfRanges, rangeHash, rootOfEdge } from "./log-tree";
import { lockLogHead, publishLogRow, type PublishedLogRow } from "./residency-log";

/** What an answer that appended a log row carries: the row's inclusion proof in a signed checkpoint that includes it. */
export interface LogReceipt {
  seq: number;
  leaf_index: number;
  tree_size: number;
  proof: string[];
  checkpoint: string;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const unhex = (text: string) => new Uint8Array(Buffer.from(text, "hex"));
export const edgeOf = (text: string): Hash[] => (text.match(/[0-9a-f]{64}/g) ?? []).map(unhex);

/** The leaf data of a row: the UTF-8 of its RFC 8785 canonical JSON as GET /api/residency/log publishes it. */
export function leafDataOf(row: PublishedLogRow): Uint8Array {
  return new TextEncoder().encode(canonicalize(row)!);
}

export interface TreeStep {
  nodes: Array<{ level: number; idx: number; hash: string }>;
  checkpoint: { size: number; root: string; edge: string; note: string };
  receipt: LogReceipt;
}

/** One append's tree work: a leaf hash, one node hash per completed subtree, the root, one signature. */
export function treeStep(edge: string, row: PublishedLogRow, signer: LogSigner): TreeStep {
  const before = edgeOf(edge);
  const grown = appendLeaf(before, row.seq - 1, leafHash(leafDataOf(row)));
  const root = rootOfEdge(grown.edge);
  const note = signCheckpoint({ origin: signer.origin, size: row.seq, root }, signer.origin, signer.seed);
  return {
    nodes: grown.nodes.map((n) => ({ level: n.level, idx: n.index, hash: hex(n.hash) })),
    checkpoint: { size: row.seq, root: hex(root), edge: grown.edge.map(hex).join(""), note },
    receipt: { seq: row.seq, leaf_index: row.seq - 1, tree_size: row.seq, proof: [...before].reverse().map(b64), checkpoint: note },
  };
}

/**
 * Builds the tree over rows that have none yet (the rows written before the tree existed), one
 * page at a time, and signs a checkpoint at `upto`. Runs under the log's lock. Returns the edge at `upto`.
 */
export async function catchUpTree(db: Database, signer: LogSigner, upto: number, now: Date): Promise<string> {
  const [kept] = await db.select({ size: logCheckpoints.size, edge: logCheckpoints.edge }).from(logCheckpoints).where(lte(logCheckpoints.size, upto)).orderBy(desc(logCheckpoints.size)).limit(1);
  let size = kept?.size ?? 0;
  let edge = edgeOf(kept?.edge ?? "");
  if (size === upto) return kept!.edge;
  while (size < upto) {
    const rows = await db.select().from(residencyLog).where(and(gt(residencyLog.seq, size), lte(residencyLog.seq, upto))).orderBy(asc(residencyLog.seq)).limit(1000);
    if (rows.length === 0 || rows[0]!.seq !== size + 1) throw new Error(`the residency log has no row ${size + 1}`);
    const nodes: Array<{ level: number; idx: number; hash: string }> = [];
    for (const row of rows) {
      const grown = appendLeaf(edge, row.seq - 1, leafHash(leafDataOf(publishLogRow(row))));
      edge = grown.edge;
      nodes.push(...grown.nodes.map((n) => ({ level: n.level, idx: n.index, hash: hex(n.hash) })));
      size = row.seq;
    }
    await db.insert(logNodes).values(nodes).onConflictDoNothing();
  }
  const root = rootOfEdge(edge);
  const edgeText = edge.map(hex).join("");
  const note = signCheckpoint({ origin: signer.origin, size: upto, root }, signer.origin, signer.seed);
  await db.insert(logCheckpoints).values({ size: upto, root: hex(root), edge: edgeText, note, signedAt: now }).onConflictDoNothing();
  return edgeText;
}

export interface HeldCheckpoint {
  size: number;
  root: string;
  note: string;
  signedAt: Date;
  cosignatures: Array<{ witness: string; line: string; cosignedAt: Date }>;
}

/** The latest signed checkpoint with every cosignature held for it, and how many rows the log has. */
export async function latestCheckpoint(db: Database): Promise<{ checkpoint: HeldCheckpoint | null; logSize: number }> {
  const rows = await db
    .select({
      size: logCheckpoints.size,
      root: logCheckpoints.root,
      note: logCheckpoints.note,
      signedAt: logCheckpoints.signedAt,
      logSize: sql<string | number | null>`(SELECT max(${residencyLog.seq}) FROM ${residencyLog})`,
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
    const [count] = await db.select({ size: sql<string | number | null>`max(${residencyLog.seq})` }).from(residencyLog);
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
export async function currentCheckpoint(db: Database, now: Date): Promise<HeldCheckpoint> {
  const held = await latestCheckpoint(db);
  if (held.checkpoint && held.checkpoint.size >= held.logSize) return servable(db, held.checkpoint, now);
  // Signing (the empty log's note, or the tree over older rows) is for the log's recorded identity only.
  const signer = await appendSigner(db, now);
  if (held.logSize === 0) {
    const note = signCheckpoint({ origin: signer.origin, size: 0, root: EMPTY_ROOT }, signer.origin, signer.seed);
    return { size: 0, root: hex(EMPTY_ROOT), note, signedAt: now, cosignatures: [] };
  }
  await db.transaction(async (tx) => {
    const head = await lockLogHead(tx as Database);
    await catchUpTree(tx as Database, signer, head.seq, now);
  });
  return servable(db, (await latestCheckpoint(db)).checkpoint!, now);
}

/** A held checkpoint, only when its note verifies against the published identity (the card's `log`): otherwise a 503, never the note. */
async function servable(db: Database, checkpoint: HeldCheckpoint, now: Date): Promise<HeldCheckpoint> {
  if (await verifiedNote(db, checkpoint.note, now)) return checkpoint;
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
export async function catchUpLogTree(db: Database, now = new Date()): Promise<void> {
  const held = await latestCheckpoint(db);
  if (held.logSize === 0 || (held.checkpoint && held.checkpoint.size >= held.logSize)) return;
  try {
    await currentCheckpoint(db, now);
  } catch (err) {
    if (!(err instanceof CityError && err.code === "log_identity_mismatch")) throw err;
  }
}

/** The note of a checkpoint with its cosignature lines appended (C2SP: one note, many signatures). */
export function cosignedNote(checkpoint: HeldCheckpoint): string {
  return checkpoint.note + checkpoint.cosignatures.map((c) => c.line).join("");
}

async function treeSize(db: Database): Promise<number> {
  const [row] = await db.select({ size: logCheckpoints.size }).from(logCheckpoints).orderBy(desc(logCheckpoints.size)).limit(1);
  return row?.size ?? 0;
}

async function readNodes(db: Database, ids: readonly NodeId[]): Promise<Map<string, Hash>> {
  const map = new Map<string, Hash>();
  if (ids.length === 0) return map;
  const wanted = sql.join(ids.map((id) => sql`(${id.level}::smallint, ${id.index}::bigint)`), sql`, `);
  const rows = await db.select().from(logNodes).where(sql`(${logNodes.level}, ${logNodes.idx}) IN (${wanted})`);
  for (const row of rows) map.set(nodeKey({ level: row.level, index: Number(row.idx) }), unhex(row.hash));
  return map;
}

function hashRanges(ranges: Array<[number, number]>, nodes: Map<string, Hash>): string[] {
  return ranges.map(([lo, hi]) =>
    b64(
      rangeHash(lo, hi, (id) => {
        const hash = nodes.get(nodeKey(id));
        if (!hash) throw new Error(`the log tree has no node ${nodeKey(id)}`);
        return hash;
      }),
    ),
  );
}

function reached(size: number, latest: number, what: string): void {
  if (size > latest) throw new CityError("bad_request", `${what} ${size} is a size the log never reached (it has ${latest} rows in its tree).`);
}

/** The inclusion proof of row `seq` in the tree of `size` (default the latest), with that size's checkpoint when held. */
export async function inclusionProof(db: Database, seq: number, size?: number): Promise<{ seq: number; leaf_index: number; tree_size: number; proof: string[]; checkpoint: string | null }> {
  const latest = await treeSize(db);
  const n = size ?? latest;
  reached(n, latest, "size");
  if (seq > n) throw new CityError("bad_request", `row ${seq} is not in the tree of size ${n}: ask for a size of at least ${seq}.`);
  const ranges = inclusionRanges(seq - 1, n);
  const [nodes, [held]] = await Promise.all([
    readNodes(db, nodesOfRanges(ranges)),
    db.select({ note: logCheckpoints.note }).from(logCheckpoints).where(eq(logCheckpoints.size, n)),
  ]);
  // A held note is given only when it verifies against the published identity (a note from before
  // the identity was recorded, signed under another origin or key, is left out: null).
  const checkpoint = held && (await verifiedNote(db, held.note, new Date(), { record: false })) ? held.note : null;
  return { seq, leaf_index: seq - 1, tree_size: n, proof: hashRanges(ranges, nodes), checkpoint };
}

/** The consistency proof from the tree of size `from` to the tree of size `to` (RFC 9162 2.1.4). */
export async function consistencyProof(db: Database, from: number, to: number): Promise<string[]> {
  if (from > to) throw new CityError("bad_request", `from (${from}) is larger than to (${to}): a log only grows.`);
  reached(to, await treeSize(db), "to");
  const ranges = consistencyRanges(from, to);
  return hashRanges(ranges, await readNodes(db, nodesOfRanges(ranges)));
}

/**
 * A C2SP tlog-tiles hash tile: the hashes of the level-8L nodes N*256 ... N*256+W-1, concatenated;
 * null when the tree has not reached them.
 */
export async function readTile(db: Database, level: number, index: number, width: number): Promise<Uint8Array | null> {
  const first = index * TILE_WIDTH;
  const rows = await db
    .select({ hash: logNodes.hash })
    .from(logNodes)
    .where(and(eq(logNodes.level, level * 8), sql`${logNodes.idx} >= ${first}`, sql`${logNodes.idx} < ${first + width}`))
    .orderBy(asc(logNodes.idx));
  if (rows.length !== width) return null;
  return new Uint8Array(Buffer.concat(rows.map((r) => Buffer.from(r.hash, "hex"))));
}

/** A C2SP tlog-tiles entry bundle: each leaf's data behind its big-endian uint16 length; null when not reached. */
export async function readEntryBundle(db: Database, index: number, width: number): Promise<Uint8Array | null> {
  const first = index * TILE_WIDTH;
  const [rows, size] = await Promise.all([
    db.select().from(residencyLog).where(and(gt(residencyLog.seq, first), lte(residencyLog.seq, first + width))).orderBy(asc(residencyLog.seq)),
    treeSize(db),
  ]);
  if (rows.length !== width || first + width > size) return null;
  const parts = rows.flatMap((row) => {
    const data = leafDataOf(publishLogRow(row));
    const length = Buffer.alloc(2);
    length.writeUInt16BE(data.length);
    return [length, Buffer.from(data)];
  });
  return new Uint8Array(Buffer.concat(parts));
}
