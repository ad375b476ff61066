import { b64, signCheckpoint } from "./note";
import { appendLeaf, type Hash, leafHash, rootOfEdge } from "./tree";

/** What an answer that appended a log entry carries: the entry's inclusion proof in a signed checkpoint that includes it. */
export interface LogReceipt {
  seq: number;
  leaf_index: number;
  tree_size: number;
  proof: string[];
  checkpoint: string;
}

/** Who signs a log's checkpoints: its origin (the note's key name) and the Ed25519 seed. */
export interface CheckpointSigner {
  origin: string;
  seed: Uint8Array;
}

export const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
export const unhex = (text: string) => new Uint8Array(Buffer.from(text, "hex"));

/** A tree's edge (the roots of its complete subtrees, largest first) from its stored hex form. */
export const edgeOf = (text: string): Hash[] => (text.match(/[0-9a-f]{64}/g) ?? []).map(unhex);

/** A tree node as a log stores it: level, index and hash in hex. */
export interface StoredNode {
  level: number;
  idx: number;
  hash: string;
}

/** The tree whose edge is `edge` grown by `leaves` from leaf index `from` on: the new edge, and each subtree completed on the way. */
export function growTree(edge: readonly Hash[], from: number, leaves: readonly Uint8Array[]): { edge: Hash[]; nodes: StoredNode[] } {
  let grown = [...edge];
  const nodes: StoredNode[] = [];
  leaves.forEach((data, i) => {
    const step = appendLeaf(grown, from + i, leafHash(data));
    grown = step.edge;
    nodes.push(...step.nodes.map((n) => ({ level: n.level, idx: n.index, hash: hex(n.hash) })));
  });
  return { edge: grown, nodes };
}

/** The signed checkpoint of the tree of `size` whose edge is `edge`, with the root and edge as a log keeps them. */
export function checkpointOf(edge: readonly Hash[], size: number, signer: CheckpointSigner): { size: number; root: string; edge: string; note: string } {
  const root = rootOfEdge([...edge]);
  const note = signCheckpoint({ origin: signer.origin, size, root }, signer.origin, signer.seed);
  return { size, root: hex(root), edge: edge.map(hex).join(""), note };
}

export interface AppendStep {
  nodes: StoredNode[];
  checkpoint: { size: number; root: string; edge: string; note: string };
  receipt: LogReceipt;
}

/**
 * One append's tree work, pure: entry number `seq` (from 1) with `leafData` grows the tree whose
 * edge is `edge`: a leaf hash, one node hash per completed subtree, the root, one signature. The
 * receipt's proof is the old edge, since the new leaf is the last one of the tree it signs.
 */
export function appendStep(edge: string, seq: number, leafData: Uint8Array, signer: CheckpointSigner): AppendStep {
  const before = edgeOf(edge);
  const grown = growTree(before, seq - 1, [leafData]);
  const checkpoint = checkpointOf(grown.edge, seq, signer);
  return {
    nodes: grown.nodes,
    checkpoint,
    receipt: { seq, leaf_index: seq - 1, tree_size: seq, proof: [...before].reverse().map(b64), checkpoint: checkpoint.note },
  };
}
