import { describe, expect, it } from "vitest";
import { appendStep, checkpointOf, edgeOf, growTree, hex, unhex } from "@/lib/tlog/append";
import { mth, refKey, refSplit } from "../support/rfc9162-reference";

/**
 * lib/tlog/append.ts (every append's tree work) against independent oracles: RFC 6962's tree of 8
 * (transparency-dev/merkle testonly/constants.go: RootHashes, NodeHashes, CompactTrees) and the
 * node:crypto references of tests/support/rfc9162-reference.ts (MTH, C2SP note signing). Nothing
 * expected here is computed by lib/.
 */
const LEAF_INPUTS = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map(
  (h) => new Uint8Array(Buffer.from(h, "hex")),
);
/** RootHashes(): by tree size 1 to 8 (constants.go). */
const ROOTS = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
const H = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
/** The right edge of the tree of `n` (the perfect subtrees of its binary decomposition, largest first), by MTH. */
const refEdge = (n: number): string[] => {
  const edge: string[] = [];
  let lo = 0;
  for (let bit = 2 ** 20; bit >= 1; bit /= 2)
    if ((n - lo) & bit) {
      edge.push(H(mth(LEAF_INPUTS.slice(lo, lo + bit))));
      lo += bit;
    }
  return edge;
};
/** The perfect subtrees leaf `index` completes: level 0 (the leaf) and up while `index+1` is divisible by 2^level. */
const refCompleted = (index: number) => {
  const nodes: Array<{ level: number; idx: number; hash: string }> = [];
  for (let level = 0; (index + 1) % 2 ** level === 0; level++) {
    const idx = (index + 1) / 2 ** level - 1;
    nodes.push({ level, idx, hash: H(mth(LEAF_INPUTS.slice(idx * 2 ** level, (idx + 1) * 2 ** level))) });
  }
  return nodes;
};
const SEED = new Uint8Array(32).map((_, i) => i + 1);
const ORIGIN = "example.com/log";
/** The C2SP checkpoint note a log with SEED signs for `size` and `rootHex`, written with node:crypto. */
const refNote = (size: number, rootHex: string) => {
  const body = `${ORIGIN}\n${size}\n${Buffer.from(rootHex, "hex").toString("base64")}\n`;
  return `${body}\n${refKey(SEED).signLine(ORIGIN, body)}`;
};

describe("hex forms", () => {
  it("writes and reads lowercase hex", () => {
    expect(hex(Uint8Array.of(0, 0xab, 0x10))).toBe("00ab10");
    expect([...unhex("00ab10")]).toEqual([0, 0xab, 0x10]);
    expect(unhex("00ab10")).toBeInstanceOf(Uint8Array);
  });

  it("reads a stored edge as 32-byte hashes, largest first; nothing from an empty or short text", () => {
    expect(edgeOf("")).toEqual([]);
    expect(edgeOf("ab".repeat(31))).toEqual([]);
    const two = ROOTS[3]! + ROOTS[0]!;
    expect(edgeOf(two).map(H)).toEqual([ROOTS[3], ROOTS[0]]);
    expect(edgeOf(ROOTS[7]!).map(H)).toEqual([ROOTS[7]]);
  });
});

describe("growTree (RFC 6962 tree of 8)", () => {
  it("keeps CompactTrees as the edge and stores each completed subtree, leaf by leaf", () => {
    let edge: Uint8Array[] = [];
    for (let i = 0; i < 8; i++) {
      const step = growTree(edge, i, [LEAF_INPUTS[i]!]);
      expect(step.edge.map(H)).toEqual(refEdge(i + 1));
      expect(step.nodes).toEqual(refCompleted(i));
      edge = step.edge;
    }
  });

  it("grows several leaves at once as one at a time: the nodes of each, in order", () => {
    const first = growTree([], 0, LEAF_INPUTS.slice(0, 3));
    expect(first.edge.map(H)).toEqual(refEdge(3));
    expect(first.nodes).toEqual([0, 1, 2].flatMap(refCompleted));
    const rest = growTree(first.edge, 3, LEAF_INPUTS.slice(3));
    expect(rest.edge.map(H)).toEqual(refEdge(8));
    expect(rest.nodes).toEqual([3, 4, 5, 6, 7].flatMap(refCompleted));
    expect(rest.nodes.at(-1)).toEqual({ level: 3, idx: 0, hash: ROOTS[7] });
  });

  it("leaves the edge as it was when no leaf is given", () => {
    const edge = edgeOf(ROOTS[1]!);
    expect(growTree(edge, 2, [])).toEqual({ edge, nodes: [] });
  });
});

describe("checkpointOf", () => {
  it("signs the root of the edge as a C2SP checkpoint, byte for byte (Ed25519 is deterministic)", () => {
    for (const size of [1, 3, 6, 8]) {
      const edge = refEdge(size).map(unhex);
      const got = checkpointOf(edge, size, { origin: ORIGIN, seed: SEED });
      expect(got).toEqual({ size, root: ROOTS[size - 1], edge: refEdge(size).join(""), note: refNote(size, ROOTS[size - 1]!) });
    }
  });

  it("signs the empty tree's root (SHA-256 of nothing) for an empty edge", () => {
    const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    expect(checkpointOf([], 0, { origin: ORIGIN, seed: SEED })).toEqual({ size: 0, root: empty, edge: "", note: refNote(0, empty) });
  });
});

describe("appendStep", () => {
  it("appends entry seq to the stored edge: nodes, checkpoint and a receipt whose proof is the old edge reversed", () => {
    let stored = "";
    for (let seq = 1; seq <= 8; seq++) {
      const step = appendStep(stored, seq, LEAF_INPUTS[seq - 1]!, { origin: ORIGIN, seed: SEED });
      const root = ROOTS[seq - 1]!;
      expect(step.nodes).toEqual(refCompleted(seq - 1));
      expect(step.checkpoint).toEqual({ size: seq, root, edge: refEdge(seq).join(""), note: refNote(seq, root) });
      const proof = refEdge(seq - 1)
        .reverse()
        .map((h) => Buffer.from(h, "hex").toString("base64"));
      expect(step.receipt).toEqual({ seq, leaf_index: seq - 1, tree_size: seq, proof, checkpoint: refNote(seq, root) });
      stored = step.checkpoint.edge;
    }
  });

  it("gives, for the last leaf of the tree of 7, RFC 9162's PATH(6, D[0:7]): the subtrees of 4 and of 2, nearest first", () => {
    const step = appendStep(refEdge(6).join(""), 7, LEAF_INPUTS[6]!, { origin: ORIGIN, seed: SEED });
    const k = refSplit(7);
    expect(k).toBe(4);
    expect(step.receipt.proof.map((p) => Buffer.from(p, "base64").toString("hex"))).toEqual([H(mth(LEAF_INPUTS.slice(4, 6))), H(mth(LEAF_INPUTS.slice(0, 4)))]);
  });
});
