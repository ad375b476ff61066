import { sha256 } from "@noble/hashes/sha2.js";

/**
 * The RFC 9162 section 2.1 Merkle tree, as pure functions. A stored node is a perfect subtree:
 * `level` L and `index` i cover the leaves [i * 2^L, (i + 1) * 2^L). Every other subtree hash a
 * proof needs (the right edge of a tree whose size is not a power of two) is folded from at most
 * log2(n) stored nodes, so proofs and roots never rehash the log.
 */
export type Hash = Uint8Array;
export interface NodeId {
  level: number;
  index: number;
}

export const EMPTY_ROOT: Hash = sha256(new Uint8Array(0));

export function leafHash(data: Uint8Array): Hash {
  const input = new Uint8Array(data.length + 1);
  input.set(data, 1);
  return sha256(input);
}

export function nodeHash(left: Hash, right: Hash): Hash {
  const input = new Uint8Array(65);
  input[0] = 1;
  input.set(left, 1);
  input.set(right, 33);
  return sha256(input);
}

export const nodeKey = (node: NodeId): string => `${node.level}/${node.index}`;

/** The perfect subtrees that make up the leaves [start, end), largest first (start aligned as in every RFC 9162 split). */
export function rangeNodes(start: number, end: number): NodeId[] {
  const nodes: NodeId[] = [];
  let at = start;
  while (at < end) {
    let level = 0;
    while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= end) level += 1;
    nodes.push({ level, index: at / 2 ** level });
    at += 2 ** level;
  }
  return nodes;
}

/** MTH(D[start:end]) from the stored perfect subtrees: H(first, H(second, ...)). */
export function rangeHash(start: number, end: number, node: (id: NodeId) => Hash): Hash {
  if (end <= start) return EMPTY_ROOT;
  const parts = rangeNodes(start, end).map(node);
  let hash = parts[parts.length - 1]!;
  for (let i = parts.length - 2; i >= 0; i -= 1) hash = nodeHash(parts[i]!, hash);
  return hash;
}

/** The largest power of two smaller than n (n > 1). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

type Range = [number, number];

/** The subtree ranges of PATH(m, D[0:n]) (RFC 9162 2.1.3.1), leaf side first. */
export function inclusionRanges(m: number, n: number): Range[] {
  const path = (m: number, lo: number, hi: number): Range[] => {
    if (hi - lo <= 1) return [];
    const k = split(hi - lo);
    return m < k ? [...path(m, lo, lo + k), [lo + k, hi]] : [...path(m - k, lo + k, hi), [lo, lo + k]];
  };
  return path(m, 0, n);
}

/** The subtree ranges of PROOF(m, D[0:n]) (RFC 9162 2.1.4.1). */
export function consistencyRanges(m: number, n: number): Range[] {
  if (m <= 0 || m >= n) return [];
  const subproof = (m: number, lo: number, hi: number, whole: boolean): Range[] => {
    if (m === hi - lo) return whole ? [] : [[lo, hi]];
    const k = split(hi - lo);
    return m <= k ? [...subproof(m, lo, lo + k, whole), [lo + k, hi]] : [...subproof(m - k, lo + k, hi, false), [lo, lo + k]];
  };
  return subproof(m, 0, n, true);
}

/** Every stored node the given ranges are folded from. */
export function nodesOfRanges(ranges: readonly Range[]): NodeId[] {
  return ranges.flatMap(([lo, hi]) => rangeNodes(lo, hi));
}

/**
 * The perfect subtrees completed by appending leaf `index` (its own leaf node first), given the
 * tree's right edge before it (`rangeNodes(0, index)` hashes, largest first). Returns the new
 * nodes and the right edge after it.
 */
export function appendLeaf(edge: readonly Hash[], index: number, leaf: Hash): { nodes: Array<NodeId & { hash: Hash }>; edge: Hash[] } {
  const kept = [...edge];
  const nodes: Array<NodeId & { hash: Hash }> = [{ level: 0, index, hash: leaf }];
  let hash = leaf;
  let at = index;
  let level = 0;
  while (at % 2 === 1) {
    hash = nodeHash(kept.pop()!, hash);
    at = (at - 1) / 2;
    level += 1;
    nodes.push({ level, index: at, hash });
  }
  kept.push(hash);
  return { nodes, edge: kept };
}

/** The root of the tree whose right edge is `edge` (largest subtree first). */
export function rootOfEdge(edge: readonly Hash[]): Hash {
  if (edge.length === 0) return EMPTY_ROOT;
  let hash = edge[edge.length - 1]!;
  for (let i = edge.length - 2; i >= 0; i -= 1) hash = nodeHash(edge[i]!, hash);
  return hash;
}

/** The root of a list of leaf hashes, computed from scratch (verifiers, tests). */
export function rootOfLeaves(leaves: readonly Hash[]): Hash {
  let edge: Hash[] = [];
  leaves.forEach((leaf, i) => (edge = appendLeaf(edge, i, leaf).edge));
  return rootOfEdge(edge);
}

export function equalHashes(a: Hash, b: Hash): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/**
 * The walk both RFC 9162 verifications share (2.1.3.2 and 2.1.4.2): folds `path` into `seed` from
 * node `fn` of a tree whose last node is `sn`. `right` takes every hash of the path; `left` only the
 * hashes that sit to the left (the old tree's root, in a consistency proof). Null when the path
 * does not end at the root.
 */
function foldPath(fn: number, sn: number, seed: Hash, path: readonly Hash[]): { left: Hash; right: Hash } | null {
  let left = seed;
  let right = seed;
  for (const p of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      left = nodeHash(p, left);
      right = nodeHash(p, right);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      right = nodeHash(right, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? { left, right } : null;
}

/** RFC 9162 2.1.3.2: does `proof` put the leaf at `index` into the tree of `size` with `root`? */
export function verifyInclusion(leaf: Hash, index: number, size: number, proof: readonly Hash[], root: Hash): boolean {
  if (index < 0 || index >= size) return false;
  const folded = foldPath(index, size - 1, leaf, proof);
  return folded !== null && equalHashes(folded.right, root);
}

/** RFC 9162 2.1.4.2: is the tree of `size2` with `root2` an extension of the tree of `size1` with `root1`? */
export function verifyConsistency(size1: number, size2: number, proof: readonly Hash[], root1: Hash, root2: Hash): boolean {
  if (size1 > size2 || size1 < 0) return false;
  if (size1 === size2) return proof.length === 0 && equalHashes(root1, root2);
  if (size1 === 0) return proof.length === 0;
  const path = [...proof];
  if (isPowerOfTwo(size1)) path.unshift(root1);
  if (path.length === 0) return false;
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  const folded = foldPath(fn, sn, path[0]!, path.slice(1));
  return folded !== null && equalHashes(folded.left, root1) && equalHashes(folded.right, root2);
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}
