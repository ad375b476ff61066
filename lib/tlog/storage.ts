import { CityError } from "@/lib/errors";
import { b64 } from "./note";
import { TILE_WIDTH } from "./tiles";
import { consistencyRanges, type Hash, inclusionRanges, type NodeId, nodeKey, nodesOfRanges, rangeHash } from "./tree";

/**
 * Where a transparency log keeps its tree: what proofs and tiles are read from. A log is its
 * signer (origin and key, ./append.ts CheckpointSigner) and one of these, so a second log is one
 * more pair over its own tables; the residency log's storage is lib/city/logs/residency-log/storage.ts.
 */
export interface LogStorage {
  /** The size of the largest tree a kept checkpoint covers. */
  treeSize(): Promise<number>;
  /** The stored hashes of these nodes (RFC 9162 subtree roots), keyed by nodeKey. */
  readNodes(ids: readonly NodeId[]): Promise<Map<string, Hash>>;
  /** The hashes of the nodes of `level` from index `first` on, at most `count`, in order. */
  readLevel(level: number, first: number, count: number): Promise<Hash[]>;
  /** The leaf data of entries `first` (from 0) on, at most `count`, in order. */
  readLeaves(first: number, count: number): Promise<Uint8Array[]>;
  /** The kept checkpoint note of exactly this size, or null. */
  heldNote(size: number): Promise<string | null>;
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

/** The inclusion proof of entry `seq` (from 1) in the tree of `size` (default the latest), with that size's checkpoint when held. */
export async function inclusionProof(
  storage: LogStorage,
  seq: number,
  size?: number,
): Promise<{ seq: number; leaf_index: number; tree_size: number; proof: string[]; checkpoint: string | null }> {
  const latest = await storage.treeSize();
  const n = size ?? latest;
  reached(n, latest, "size");
  if (seq > n) throw new CityError("bad_request", `row ${seq} is not in the tree of size ${n}: ask for a size of at least ${seq}.`);
  const ranges = inclusionRanges(seq - 1, n);
  const [nodes, checkpoint] = await Promise.all([storage.readNodes(nodesOfRanges(ranges)), storage.heldNote(n)]);
  return { seq, leaf_index: seq - 1, tree_size: n, proof: hashRanges(ranges, nodes), checkpoint };
}

/** The inclusion proof of entry `seq` (from 1) in the tree of `size`, which the caller knows the log reached (an integrated batch's checkpoint). */
export async function inclusionPath(storage: Pick<LogStorage, "readNodes">, seq: number, size: number): Promise<string[]> {
  const ranges = inclusionRanges(seq - 1, size);
  return hashRanges(ranges, await storage.readNodes(nodesOfRanges(ranges)));
}

/** The consistency proof from the tree of size `from` to the tree of size `to` (RFC 9162 2.1.4). */
export async function consistencyProof(storage: LogStorage, from: number, to: number): Promise<string[]> {
  if (from > to) throw new CityError("bad_request", `from (${from}) is larger than to (${to}): a log only grows.`);
  reached(to, await storage.treeSize(), "to");
  const ranges = consistencyRanges(from, to);
  return hashRanges(ranges, await storage.readNodes(nodesOfRanges(ranges)));
}

/**
 * A C2SP tlog-tiles hash tile: the hashes of the level-8L nodes N*256 ... N*256+W-1, concatenated;
 * null when the tree has not reached them.
 */
export async function hashTile(storage: LogStorage, level: number, index: number, width: number): Promise<Uint8Array | null> {
  const hashes = await storage.readLevel(level * 8, index * TILE_WIDTH, width);
  if (hashes.length !== width) return null;
  return new Uint8Array(Buffer.concat(hashes));
}

/** A C2SP tlog-tiles entry bundle: each leaf's data behind its big-endian uint16 length; null when not reached. */
export async function entryBundle(storage: LogStorage, index: number, width: number): Promise<Uint8Array | null> {
  const first = index * TILE_WIDTH;
  const [leaves, size] = await Promise.all([storage.readLeaves(first, width), storage.treeSize()]);
  if (leaves.length !== width || first + width > size) return null;
  const parts = leaves.flatMap((data) => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(data.length);
    return [length, Buffer.from(data)];
  });
  return new Uint8Array(Buffer.concat(parts));
}
