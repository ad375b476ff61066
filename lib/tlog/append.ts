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

export interface AppendStep {
  nodes: Array<{ level: number; idx: number; hash: string }>;
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
  const grown = appendLeaf(before, seq - 1, leafHash(leafData));
  const root = rootOfEdge(grown.edge);
  const note = signCheckpoint({ origin: signer.origin, size: seq, root }, signer.origin, signer.seed);
  return {
    nodes: grown.nodes.map((n) => ({ level: n.level, idx: n.index, hash: hex(n.hash) })),
    checkpoint: { size: seq, root: hex(root), edge: grown.edge.map(hex).join(""), note },
    receipt: { seq, leaf_index: seq - 1, tree_size: seq, proof: [...before].reverse().map(b64), checkpoint: note },
  };
}
