import { createHash } from "node:crypto";
import * as ed from "@noble/ed25519";
import { describe, expect, it } from "vitest";
import { consistencyProof, entryBundle, hashTile, inclusionProof, type LogStorage } from "@/lib/tlog/storage";
import { ENOCH, PETER } from "../support/go-note-vectors";
import {
  checkpointBody,
  hasValidSignature,
  keyIdOf,
  NOTE_SIGNATURE,
  parseCheckpointBody,
  parseNote,
  parseVkey,
  signatureLine,
  signCheckpoint,
  vkeyOf,
} from "@/lib/tlog/note";
import { encodeTileIndex, parseTilePath, tilePathOf } from "@/lib/tlog/tiles";
import {
  appendLeaf,
  consistencyRanges,
  EMPTY_ROOT,
  type Hash,
  inclusionRanges,
  leafHash,
  nodeHash,
  nodeKey,
  nodesOfRanges,
  rangeHash,
  rangeNodes,
  rootOfEdge,
  rootOfLeaves,
  verifyConsistency,
  verifyInclusion,
} from "@/lib/tlog/tree";
import { verifyTransparencyLog } from "@/lib/tlog/verifying-client";

/*
 * The log's pure code against vectors published by others, never computed here by the code judged:
 * every expected hash, key, signature and path below is a literal copied from the source named
 * above it. The sources: transparency-dev/merkle (the RFC 6962 tree of 8 leaves, its proofs and
 * the node IDs of proofs), golang.org/x/mod (sumdb/note's Ed25519 note, sumdb's test log and its
 * fork, sumdb/tlog's checkpoint text and its Certificate Transparency proofs from Google's Argon
 * 2020 log), and the C2SP specifications (signed-note, tlog-checkpoint, tlog-tiles).
 */
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const unhex = (h: string): Hash => new Uint8Array(Buffer.from(h, "hex"));
const unb64 = (s: string): Hash => new Uint8Array(Buffer.from(s, "base64"));
const utf8 = (s: string) => new TextEncoder().encode(s);
/** Flips one bit of the byte at `at` of one hash in a list (a copy). */
const flipped = (hashes: readonly Hash[], which: number, at = 0): Hash[] =>
  hashes.map((h, i) => (i === which ? Uint8Array.from(h, (b, j) => (j === at ? b ^ 0x10 : b)) : h));
/** Every stored node (level/index → hash) appendLeaf produces for these leaf hashes. */
function storedNodes(leaves: readonly Hash[]): Map<string, Hash> {
  const nodes = new Map<string, Hash>();
  let edge: Hash[] = [];
  leaves.forEach((leaf, i) => {
    const step = appendLeaf(edge, i, leaf);
    edge = step.edge;
    for (const node of step.nodes) nodes.set(nodeKey(node), node.hash);
  });
  return nodes;
}
/**
 * A log kept in memory (lib/tlog/storage.ts's LogStorage over the stored nodes of `leafData`), so
 * the proofs are built by the module's own inclusionProof and consistencyProof, as any log's are.
 */
function memoryLog(leafData: readonly Uint8Array[]): LogStorage {
  const nodes = storedNodes(leafData.map(leafHash));
  const level = (l: number) => [...nodes].filter(([k]) => k.startsWith(`${l}/`)).map(([k, h]) => [Number(k.split("/")[1]), h] as const);
  return {
    treeSize: async () => leafData.length,
    readNodes: async (ids) => new Map(ids.flatMap((id) => (nodes.has(nodeKey(id)) ? [[nodeKey(id), nodes.get(nodeKey(id))!] as const] : []))),
    readLevel: async (l, first, count) =>
      level(l)
        .filter(([i]) => i >= first && i < first + count)
        .sort((x, y) => x[0] - y[0])
        .map(([, h]) => h),
    readLeaves: async (first, count) => leafData.slice(first, first + count),
    heldNote: async () => null,
  };
}
const b64ToHex = (proof: string[]) => proof.map((p) => Buffer.from(p, "base64").toString("hex"));

// ---------------------------------------------------------------------------------------------
// RFC 6962 / RFC 9162 section 2.1: the classic tree of 8 leaves.
// transparency-dev/merkle testonly/constants.go (LeafInputs, NodeHashes, RootHashes, CompactTrees).
// ---------------------------------------------------------------------------------------------
const LEAF_INPUTS = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map(unhex);
/** NodeHashes(): [level][index]. */
const NODE_HASHES = [
  [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
  ],
  [
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
  ],
  ["d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7", "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
  ["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
];
/** RootHashes(): indexed by tree size, 0 to 8. */
const ROOTS = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
/** CompactTrees(): the right edge of each tree size, as [level, index] into NodeHashes. */
const COMPACT_TREES: Array<Array<[number, number]>> = [
  [],
  [[0, 0]],
  [[1, 0]],
  [
    [1, 0],
    [0, 2],
  ],
  [[2, 0]],
  [
    [2, 0],
    [0, 4],
  ],
  [
    [2, 0],
    [1, 2],
  ],
  [
    [2, 0],
    [1, 2],
    [0, 6],
  ],
  [[3, 0]],
];

// transparency-dev/merkle proof/verify_test.go: inclusionProofs (there `leaf` is 1-based: leaf
// index here = their leaf - 1) and consistencyProofs, over the same 8 leaves.
const INCLUSION: Array<{ index: number; size: number; proof: string[] }> = [
  { index: 0, size: 1, proof: [] },
  {
    index: 0,
    size: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    index: 5,
    size: 8,
    proof: [
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
  { index: 2, size: 3, proof: ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"] },
  {
    index: 1,
    size: 5,
    proof: [
      "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
  },
];
const CONSISTENCY: Array<{ size1: number; size2: number; proof: string[] }> = [
  { size1: 1, size2: 1, proof: [] },
  {
    size1: 1,
    size2: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    size1: 6,
    size2: 8,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
  {
    size1: 2,
    size2: 5,
    proof: ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"],
  },
  {
    size1: 6,
    size2: 7,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
];
// transparency-dev/merkle proof/verify_test.go: sha256SomeHash, a hash that is in no tree.
const SOME_HASH = unhex("abacaba000000000000000000000000000000000000000000060061e00123456");

describe("RFC 6962 tree of 8 leaves (transparency-dev/merkle testonly/constants.go)", () => {
  const leaves = LEAF_INPUTS.map(leafHash);

  it("hashes the 8 leaf inputs into NodeHashes' level 0 (RFC 6962 leaf prefix 0x00)", () => {
    expect(leaves.map(hex)).toEqual(NODE_HASHES[0]);
  });

  it("stores exactly NodeHashes as the perfect subtrees of the tree of 8 (interior prefix 0x01)", () => {
    const nodes = storedNodes(leaves);
    const expected = NODE_HASHES.flatMap((row, level) => row.map((hash, index) => [`${level}/${index}`, hash]));
    expect([...nodes].map(([key, hash]) => [key, hex(hash)]).sort()).toEqual(expected.sort());
    // nodeHash alone, on the vector's own children.
    expect(hex(nodeHash(unhex(NODE_HASHES[2]![0]!), unhex(NODE_HASHES[2]![1]!)))).toBe(NODE_HASHES[3]![0]);
  });

  it("gives RootHashes for every size 0..8 (rootOfLeaves, and rangeHash over the stored nodes)", () => {
    const nodes = storedNodes(leaves);
    for (let size = 0; size <= 8; size++) {
      expect(hex(rootOfLeaves(leaves.slice(0, size))), `size ${size}`).toBe(ROOTS[size]);
      expect(hex(rangeHash(0, size, (id) => nodes.get(nodeKey(id))!)), `size ${size}`).toBe(ROOTS[size]);
    }
    expect(hex(EMPTY_ROOT)).toBe(ROOTS[0]);
  });

  it("keeps CompactTrees as the right edge after each append", () => {
    let edge: Hash[] = [];
    for (let size = 0; size <= 8; size++) {
      expect(edge.map(hex), `size ${size}`).toEqual(COMPACT_TREES[size]!.map(([l, i]) => NODE_HASHES[l]![i]));
      expect(
        rangeNodes(0, size).map((n) => [n.level, n.index]),
        `size ${size}`,
      ).toEqual(COMPACT_TREES[size]);
      expect(hex(rootOfEdge(edge)), `size ${size}`).toBe(ROOTS[size]);
      if (size < 8) edge = appendLeaf(edge, size, leaves[size]!).edge;
    }
  });
});

describe("RFC 6962 inclusion proofs (transparency-dev/merkle proof/verify_test.go)", () => {
  const leaves = LEAF_INPUTS.map(leafHash);

  it.each(INCLUSION)("builds the proof of leaf $index in the tree of $size exactly", async ({ index, size, proof }) => {
    const built = await inclusionProof(memoryLog(LEAF_INPUTS.slice(0, size)), index + 1, size);
    expect(b64ToHex(built.proof)).toEqual(proof);
  });

  it.each(INCLUSION)("verifies the proof of leaf $index in the tree of $size", ({ index, size, proof }) => {
    expect(verifyInclusion(leaves[index]!, index, size, proof.map(unhex), unhex(ROOTS[size]!))).toBe(true);
  });

  // verify_test.go corruptInclusionProof: every probe must be refused.
  it.each(INCLUSION.filter((v) => v.size > 1))("refuses the corrupted proofs of leaf $index in the tree of $size", ({ index, size, proof: p }) => {
    const proof = p.map(unhex);
    const root = unhex(ROOTS[size]!);
    const leaf = leaves[index]!;
    const refused = (i: number, n: number, l: Hash, pr: Hash[], r: Hash, what: string) => expect(verifyInclusion(l, i, n, pr, r), what).toBe(false);
    refused(index - 1, size, leaf, proof, root, "index - 1");
    refused(index + 1, size, leaf, proof, root, "index + 1");
    refused(index ^ 2, size, leaf, proof, root, "index ^ 2");
    refused(index, size * 2, leaf, proof, root, "size * 2");
    refused(index, Math.floor(size / 2), leaf, proof, root, "size / 2");
    refused(index, size, utf8("WrongLeaf"), proof, root, "wrong leaf");
    refused(index, size, leaf, proof, unhex(ROOTS[0]!), "empty root");
    refused(index, size, leaf, proof, SOME_HASH, "random root");
    refused(index, size, leaf, [...proof, new Uint8Array(0)], root, "trailing garbage");
    refused(index, size, leaf, [...proof, root], root, "trailing root");
    refused(index, size, leaf, [new Uint8Array(0), ...proof], root, "preceding garbage");
    refused(index, size, leaf, [root, ...proof], root, "preceding root");
    for (let i = 0; i < proof.length; i++) refused(index, size, leaf, flipped(proof, i), root, `proof[${i}] with a bit flipped`);
    refused(index, size, leaf, proof.slice(0, -1), root, "removed component");
    if (proof.length > 1) refused(index, size, leaf, [proof[0]!, SOME_HASH, ...proof.slice(1)], root, "inserted component");
  });
});

describe("tile data of the tree of 8 (C2SP tlog-tiles, over the storage)", () => {
  it("serves the level-0 hash tile as the leaves' NodeHashes, concatenated; none past the tree", async () => {
    const log = memoryLog(LEAF_INPUTS);
    expect(hex((await hashTile(log, 0, 0, 8))!)).toBe(NODE_HASHES[0]!.join(""));
    expect(hex((await hashTile(log, 0, 0, 3))!)).toBe(NODE_HASHES[0]!.slice(0, 3).join(""));
    expect(await hashTile(log, 0, 0, 9)).toBeNull();
  });

  it("serves the entry bundle as each leaf's data behind its big-endian uint16 length; none past the tree", async () => {
    const log = memoryLog(LEAF_INPUTS);
    const lengthsAndData = ["0000", "000100", "000110", "00022021", "00023031", "000440414243", "00085051525354555657"];
    expect(hex((await entryBundle(log, 0, 8))!)).toBe([...lengthsAndData, "0010606162636465666768696a6b6c6d6e6f"].join(""));
    expect(hex((await entryBundle(log, 0, 2))!)).toBe("0000000100");
    expect(await entryBundle(log, 0, 9)).toBeNull();
  });
});

describe("RFC 6962 consistency proofs (transparency-dev/merkle proof/verify_test.go)", () => {
  it.each(CONSISTENCY)("builds the proof from $size1 to $size2 exactly", async ({ size1, size2, proof }) => {
    expect(b64ToHex(await consistencyProof(memoryLog(LEAF_INPUTS.slice(0, size2)), size1, size2))).toEqual(proof);
  });

  it.each(CONSISTENCY)("verifies the proof from $size1 to $size2", ({ size1, size2, proof }) => {
    expect(verifyConsistency(size1, size2, proof.map(unhex), unhex(ROOTS[size1]!), unhex(ROOTS[size2]!))).toBe(true);
  });

  // verify_test.go corruptConsistencyProof: every probe must be refused.
  it.each(CONSISTENCY.filter((v) => v.proof.length > 0))("refuses the corrupted proofs from $size1 to $size2", ({ size1, size2, proof: p }) => {
    const proof = p.map(unhex);
    const root1 = unhex(ROOTS[size1]!);
    const root2 = unhex(ROOTS[size2]!);
    const refused = (s1: number, s2: number, pr: Hash[], r1: Hash, r2: Hash, what: string) => expect(verifyConsistency(s1, s2, pr, r1, r2), what).toBe(false);
    refused(size1 - 1, size2, proof, root1, root2, "size1 - 1");
    refused(size1 + 1, size2, proof, root1, root2, "size1 + 1");
    refused(size1 ^ 2, size2, proof, root1, root2, "size1 ^ 2");
    refused(size1, size2 * 2, proof, root1, root2, "size2 * 2");
    refused(size1, Math.floor(size2 / 2), proof, root1, root2, "size2 / 2");
    refused(size1, size2, proof, utf8("WrongRoot"), root2, "wrong root1");
    refused(size1, size2, proof, root1, utf8("WrongRoot"), "wrong root2");
    refused(size1, size2, proof, root2, root1, "swapped roots");
    refused(size1, size2, [], root1, root2, "empty proof");
    refused(size1, size2, [...proof, new Uint8Array(0)], root1, root2, "trailing garbage");
    refused(size1, size2, [...proof, root1], root1, root2, "trailing root1");
    refused(size1, size2, [...proof, root2], root1, root2, "trailing root2");
    refused(size1, size2, [new Uint8Array(0), ...proof], root1, root2, "preceding garbage");
    refused(size1, size2, [root1, ...proof], root1, root2, "preceding root1");
    refused(size1, size2, [root2, ...proof], root1, root2, "preceding root2");
    refused(size1, size2, [proof[0]!, ...proof], root1, root2, "preceding proof[0]");
    refused(size1, size2, proof.slice(0, -1), root1, root2, "truncated proof");
    for (let i = 0; i < proof.length; i++) refused(size1, size2, flipped(proof, i), root1, root2, `proof[${i}] with a bit flipped`);
  });

  // verify_test.go TestVerifyConsistency: the sizes that are always consistent, and those that never are.
  it("takes the trivial cases as verify_test.go does", () => {
    const r1 = utf8("don't care 1");
    const r2 = utf8("don't care 2");
    const empty = unhex(ROOTS[0]!);
    expect(verifyConsistency(0, 0, [], r1, r2)).toBe(false);
    expect(verifyConsistency(1, 1, [], r1, r2)).toBe(false);
    expect(verifyConsistency(0, 0, [], r1, r1)).toBe(true);
    expect(verifyConsistency(0, 1, [], r1, r2)).toBe(true);
    expect(verifyConsistency(1, 1, [], r2, r2)).toBe(true);
    expect(verifyConsistency(1, 0, [], r1, r2)).toBe(false);
    expect(verifyConsistency(2, 1, [], r1, r2)).toBe(false);
    expect(verifyConsistency(1, 2, [], r1, r2)).toBe(false);
    expect(verifyConsistency(0, 0, [], empty, r2)).toBe(false);
    expect(verifyConsistency(1, 1, [], empty, r2)).toBe(false);
    expect(verifyConsistency(0, 0, [empty], empty, empty)).toBe(false);
    expect(verifyConsistency(0, 1, [empty], empty, empty)).toBe(false);
    expect(verifyConsistency(1, 1, [empty], empty, empty)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// The node IDs of proofs: transparency-dev/merkle proof/proof_test.go (TestInclusion,
// TestConsistency). id(level, index); a `rehash(begin, end)` span is one subtree that is not
// stored, folded from those nodes (listed there smallest first; here each proof element is its
// stored nodes largest first, so a span reads reversed).
// ---------------------------------------------------------------------------------------------
type Ids = Array<[number, number]>;
const rehashed = (ids: Ids, span?: [number, number]): Ids[] => {
  if (!span) return ids.map((id) => [id]);
  const [begin, end] = span;
  return [...ids.slice(0, begin).map((id): Ids => [id]), ids.slice(begin, end).reverse(), ...ids.slice(end).map((id): Ids => [id])];
};
const INCLUSION_IDS: Array<[number, number, Ids, [number, number]?]> = [
  [1, 0, []],
  [2, 0, [[0, 1]]],
  [2, 1, [[0, 0]]],
  [
    3,
    1,
    [
      [0, 0],
      [0, 2],
    ],
  ],
  [
    7,
    0,
    [
      [0, 1],
      [1, 1],
      [0, 6],
      [1, 2],
    ],
    [2, 4],
  ],
  [
    7,
    1,
    [
      [0, 0],
      [1, 1],
      [0, 6],
      [1, 2],
    ],
    [2, 4],
  ],
  [
    7,
    2,
    [
      [0, 3],
      [1, 0],
      [0, 6],
      [1, 2],
    ],
    [2, 4],
  ],
  [
    7,
    3,
    [
      [0, 2],
      [1, 0],
      [0, 6],
      [1, 2],
    ],
    [2, 4],
  ],
  [
    7,
    4,
    [
      [0, 5],
      [0, 6],
      [2, 0],
    ],
  ],
  [
    7,
    5,
    [
      [0, 4],
      [0, 6],
      [2, 0],
    ],
  ],
  [
    7,
    6,
    [
      [1, 2],
      [2, 0],
    ],
  ],
  [
    4,
    2,
    [
      [0, 3],
      [1, 0],
    ],
  ],
  [
    5,
    3,
    [
      [0, 2],
      [1, 0],
      [0, 4],
    ],
  ],
  [
    6,
    3,
    [
      [0, 2],
      [1, 0],
      [1, 2],
    ],
  ],
  [
    6,
    4,
    [
      [0, 5],
      [2, 0],
    ],
  ],
  [
    15,
    10,
    [
      [0, 11],
      [1, 4],
      [0, 14],
      [1, 6],
      [3, 0],
    ],
    [2, 4],
  ],
  [
    31,
    24,
    [
      [0, 25],
      [1, 13],
      [0, 30],
      [1, 14],
      [3, 2],
      [4, 0],
    ],
    [2, 4],
  ],
  [
    95,
    81,
    [
      [0, 80],
      [1, 41],
      [2, 21],
      [0, 94],
      [1, 46],
      [2, 22],
      [4, 4],
      [6, 0],
    ],
    [3, 6],
  ],
];
const CONSISTENCY_IDS: Array<[number, number, Ids, [number, number]?]> = [
  [1, 2, [[0, 1]]],
  [
    1,
    4,
    [
      [0, 1],
      [1, 1],
    ],
  ],
  [
    1,
    6,
    [
      [0, 1],
      [1, 1],
      [1, 2],
    ],
  ],
  [2, 3, [[0, 2]]],
  [
    2,
    8,
    [
      [1, 1],
      [2, 1],
    ],
  ],
  [
    3,
    7,
    [
      [0, 2],
      [0, 3],
      [1, 0],
      [0, 6],
      [1, 2],
    ],
    [3, 5],
  ],
  [
    4,
    7,
    [
      [0, 6],
      [1, 2],
    ],
    [0, 2],
  ],
  [
    5,
    7,
    [
      [0, 4],
      [0, 5],
      [0, 6],
      [2, 0],
    ],
  ],
  [
    6,
    7,
    [
      [1, 2],
      [0, 6],
      [2, 0],
    ],
  ],
  [
    7,
    8,
    [
      [0, 6],
      [0, 7],
      [1, 2],
      [2, 0],
    ],
  ],
  [1, 1, []],
  [2, 2, []],
  [3, 3, []],
  [4, 4, []],
  [5, 5, []],
  [7, 7, []],
  [8, 8, []],
  [2, 4, [[1, 1]]],
  [
    3,
    5,
    [
      [0, 2],
      [0, 3],
      [1, 0],
      [0, 4],
    ],
  ],
  [
    3,
    6,
    [
      [0, 2],
      [0, 3],
      [1, 0],
      [1, 2],
    ],
  ],
  [4, 6, [[1, 2]]],
  [
    1,
    7,
    [
      [0, 1],
      [1, 1],
      [0, 6],
      [1, 2],
    ],
    [2, 4],
  ],
  [
    10,
    15,
    [
      [1, 4],
      [1, 5],
      [0, 14],
      [1, 6],
      [3, 0],
    ],
    [2, 4],
  ],
  [
    24,
    31,
    [
      [3, 2],
      [0, 30],
      [1, 14],
      [2, 6],
      [4, 0],
    ],
    [1, 4],
  ],
  [
    81,
    95,
    [
      [0, 80],
      [0, 81],
      [1, 41],
      [2, 21],
      [0, 94],
      [1, 46],
      [2, 22],
      [4, 4],
      [6, 0],
    ],
    [4, 7],
  ],
];
const idsOf = (ranges: Array<[number, number]>): Ids[] => ranges.map(([lo, hi]) => rangeNodes(lo, hi).map((n): [number, number] => [n.level, n.index]));

describe("the nodes a proof is made of (transparency-dev/merkle proof/proof_test.go)", () => {
  it.each(INCLUSION_IDS)("inclusion in the tree of %i of leaf %i", (size, index, ids, span) => {
    expect(idsOf(inclusionRanges(index, size))).toEqual(rehashed(ids, span));
    expect(nodesOfRanges(inclusionRanges(index, size)).map((n) => [n.level, n.index])).toEqual(rehashed(ids, span).flat());
  });

  it.each(CONSISTENCY_IDS)("consistency from %i to %i", (size1, size2, ids, span) => {
    expect(idsOf(consistencyRanges(size1, size2))).toEqual(rehashed(ids, span));
  });
});

// ---------------------------------------------------------------------------------------------
// A real Certificate Transparency log: golang.org/x/mod sumdb/tlog/testdata/argon2020/*.json and
// ct_test.go (Google's Argon 2020 log: get-sth, get-entries?start=10000&end=10000,
// get-proof-by-hash, get-sth-consistency?first=3654490; old root from ct_test.go).
// ---------------------------------------------------------------------------------------------
const ARGON = {
  size: 961984013,
  root: "dwlueapdd7LaOEnX2W2Wp9v2XE+KzejHRQGHwEx0oaM=",
  leafIndex: 10000,
  leafInput:
    "AAAAAAFelPhqUwAAAAViMIIFXjCCBEagAwIBAgIRAOodHzZdqWIFzYyl/SovhCMwDQYJKoZIhvcNAQELBQAwgZAxCzAJBgNVBAYTAkdCMRswGQYDVQQIExJHcmVhdGVyIE1hbmNoZXN0ZXIxEDAOBgNVBAcTB1NhbGZvcmQxGjAYBgNVBAoTEUNPTU9ETyBDQSBMaW1pdGVkMTYwNAYDVQQDEy1DT01PRE8gUlNBIERvbWFpbiBWYWxpZGF0aW9uIFNlY3VyZSBTZXJ2ZXIgQ0EwHhcNMTcwMjE1MDAwMDAwWhcNMjAwNDE2MjM1OTU5WjBfMSEwHwYDVQQLExhEb21haW4gQ29udHJvbCBWYWxpZGF0ZWQxHTAbBgNVBAsTFFBvc2l0aXZlU1NMIFdpbGRjYXJkMRswGQYDVQQDDBIqLmxhbmRsb3Jkcy5jb20uYXUwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQCtPBKKHj4zdrGlCjgTHzb5gx9JCs97DwvBz60f14gDufF2haWbOxyJ0a3opAMsZnOr8HkARVCwxdqG/PTfACcb0QM7FOlzvxGqxataTYiChwvkkif8F9GlJw69HuHgzhusPf1Ytfk3ps1PRC14MkyrS4kwPrk/Le4XdkqRpRw62wG4V6IkbzsNMEOl1H8EgUbfyapdOcVxHjIzvBVy56fBRKG05Fr5wNq3Acak5kYZdNsLhhmlrqAfAjiombW3hb3V5blJdRC0BDdYHv2+zKey6LqJ1FDoXo6IzbzPpC+aifZy47YX+/N1U64Qn5xlDg7mOP8JXfkNJHbU1TJZHif5AgMBAAGjggHhMIIB3TAfBgNVHSMEGDAWgBSQr2o6lFoL2JDqElZz30O0Oija5zAdBgNVHQ4EFgQUNQSLjkoz01I+iuuoC5lgEp0anhcwDgYDVR0PAQH/BAQDAgWgMAwGA1UdEwEB/wQCMAAwHQYDVR0lBBYwFAYIKwYBBQUHAwEGCCsGAQUFBwMCME8GA1UdIARIMEYwOgYLKwYBBAGyMQECAgcwKzApBggrBgEFBQcCARYdaHR0cHM6Ly9zZWN1cmUuY29tb2RvLmNvbS9DUFMwCAYGZ4EMAQIBMFQGA1UdHwRNMEswSaBHoEWGQ2h0dHA6Ly9jcmwuY29tb2RvY2EuY29tL0NPTU9ET1JTQURvbWFpblZhbGlkYXRpb25TZWN1cmVTZXJ2ZXJDQS5jcmwwgYUGCCsGAQUFBwEBBHkwdzBPBggrBgEFBQcwAoZDaHR0cDovL2NydC5jb21vZG9jYS5jb20vQ09NT0RPUlNBRG9tYWluVmFsaWRhdGlvblNlY3VyZVNlcnZlckNBLmNydDAkBggrBgEFBQcwAYYYaHR0cDovL29jc3AuY29tb2RvY2EuY29tMC8GA1UdEQQoMCaCEioubGFuZGxvcmRzLmNvbS5hdYIQbGFuZGxvcmRzLmNvbS5hdTANBgkqhkiG9w0BAQsFAAOCAQEACyHqxUzrexToY7tOv4+kyGPP2D27P1tQpyzeAl1bPObiMhNK2b9vvBLDWAaqm8c0YL1h+DBdLoWzf3xFsIkTCVCjWJTNSNlcYtgRk6or1s7jWsfXzWqsnPjPPmTIOCw7EfH7Yme3oxPs3UUsmShAgPwNohAtL9GqlqMiKM6v1WU3NHt01jEoNP23LRa6KeNK6AH6WHJykzL223IlhgXjHTeuQj6lR+TNrQXJuhwTXYe+20rrpPQxc1Pn7AqnvfWgmicRQ7gdIcr4V6+ecTvLfNOaJ0ZYe5G5giuAAdTm7F57pk04f4gyZNYKrj88mvbkoriN8b6jcWExtrYO6bm2TwAA",
  auditPath: [
    "T46AmJsuOM/gFiGlUp+IJJebp+1Z5qratFNW7U0JyOQ=",
    "9Jj1Feodn42uRYEfffkV4HF/EIPFQ5Zo9IwkxbQ2uhk=",
    "D53/1oCNebF4J59HHgioovKZxrmrKcVuCVhy3Izg8Ck=",
    "wSFDgGSrsXRPA+1c8WHoAFCsWeUv8NDyP/Q/SgsyVyY=",
    "516/RcwsgdwdzHn18v1dJHqBkgFUbNhmCIWOGjsMJaE=",
    "naTFY2ajLFgrgs5XUl+zJYZnnlJksLGsA1VYwpLfqbY=",
    "mKBRJo6qao+0Kdh/rhGkZUbHUAxMhrtrclrTpIbNjIg=",
    "Co4ueOFE7lpifLio94irxxsv1wFMMaK3tPu2ZQkHlro=",
    "yRgy800K6JMYCC05sWfqF2kvCg2riT/pVM+nEa6V5+0=",
    "n2O38XJZC8/Wpbwi9HhgVizlUyeUHVZvYyQB1607MRc=",
    "go3tAjuNfNSCj87y2Rg1xOroDknGN1eaf3cgvzObf7Q=",
    "8D0Mj3/J7ySSnFb0afIHYXv6rlOhECnsebY6XKi1IR8=",
    "6rcez46ZU8M5vPiWVMAUfJfAOV0pPP/mch/lYzZhj/M=",
    "2rtIeXrPvSdUyHc5maIgSAVB2BzaKaupWxSAiVayDE4=",
    "nniW/IMFQPN5xw8UsHFn7CRStYbm1gLu7NNa6kkRqJQ=",
    "mRPPi7sQS22MduIEyvcNzCNFqIt6kLwYPkNKrVtIcu8=",
    "JvTivzESNS9wHI8aph5a7uieVmtS/p9PciMZ5D6GyOo=",
    "UTyQd+Ym0wY4zG+qK806bBORwi1CSVvFQ/KknnqoZj8=",
    "hXODrqN+ff+U6zPqRQ+ZQKs6im1fPcxIerDSfNwflhE=",
    "II6GE+WY/DrpZzfHztLwkR46o37zVkNLCyPYlf68zA0=",
    "d609kWWcNBllbA8Jb/ad4XAVVGnScLRmtP8FYyr+Dck=",
    "rikBsP0G0gioXRpBFED2CzQdSLrGPvRd0bEcbEZw1rI=",
    "GXIElfmnRuWfbA4z7ubV/UwlpSRUbUeec7oL5HDDnh0=",
    "pR0SH/NYP6s9+8azWwaeUXA4Ze/3WCIgMfh5YW6wvcE=",
    "f3GuAKYVrF8RBg3s15jvA/YvV9oAliWtzP/imwPhQVA=",
    "WHn8zDxlVgkV+lSlmzaOdfSBrTHoRr5nT3d76q0KKWE=",
    "f2uV2ZxVgULzLPKuZcowRY3ZY7fRlX59iDBjV1R8kNQ=",
    "NzQVjJsvQwbi7WStMr9oFkh9VbHfK7LB6o7WwAqwNTs=",
    "C0LttBeYHZHgL+032JIcJC3CTBIyza/hsbmJUgJfmDI=",
    "nixU5CWTFVDlF4BGdcU6kA7WSYurEpe9jRWc+F/7sOc=",
  ],
  oldSize: 3654490,
  oldRoot: "AuIZ5V6sDUj1vn3Y1K85oOaQ7y+FJJKtyRTl1edIKBQ=",
  consistency: [
    "80Sfbj6UQEdVSZCSIgh9NMPj3vCBzcc1A48B2crJSWg=",
    "FZcrgAHUk6nNPviJZq8kEK6jCG1d18pJOFE45ZDc1TQ=",
    "Q67reWXmPBo1UfmwBap4Xi9PMPfFdUSSw3WGlRZdG7k=",
    "eJ7CyhR4PxzBxDIsWgrVYW1eFUb9ndgf46tFmiqVrxA=",
    "QrDwp062Grm5WY8KdrhFsBuuNjGzRox2Jb8PmVL5OYw=",
    "XM4YMjMEdLH/XJam/ZWyaP14k3cmsOtnPsOWQ54lW1s=",
    "SGiBh+jOTGccXU48ZzgQ88lRcBmtB4wz4oSDndv2QTg=",
    "WAS6txqNLYKGL1GdBdpqmV42TTfn6cJsuDsqLXuTCNI=",
    "QFmRS0rirUA7ZN3lxFjDncV+E1OCrn3NUB4RCp+5fzc=",
    "Hdbp7It2XBNZmNDBpCN/KPd7vfVqxgzwOosqVIaEA9E=",
    "mxvHL0ZiblBdD7j7pIa1jlfB0gSqfJ6oX0UGo7L0VsU=",
    "q5hjyvoW6TL/PThgcitpDcSTrnKX2p1+aqscqH2euRA=",
    "jTOWDqt3IHj2NVFeezyBz2ofpru+ztEywqKUAfFclKI=",
    "GIRn0w3HqJdvU9j1WVD//eR6lk2AaTVjyzjsJNP8U88=",
    "x52GJvxG81fnQBrgOTbll1A5tz95/LXK0Ag1NhB0r1I=",
    "6/0OqrcTgc3o5dD5PymmoC96lB9yLPFuTHVvLy8fSGk=",
    "Gf+iKLfcXO5l4JEFmsZvSdG5q1uEeWPfYLrds6pmjz0=",
    "DGuaco+McyM3AfRSF6qX7RwSetwe2ieYJmxw5e9rVx0=",
    "2tQJ9V32hnYp+fdpP6TcjmgJmLeNVOMKM0Ml1kk4cNU=",
    "3PapK+IkyJr8I9yAErAmzuZezzLMzsg+PfeRCgNW8NQ=",
    "s6xiYeejb+wtqHA+URJZ2I/SCPyIW8coP6aB00FJbMY=",
    "z9lSpmdTcr5M5ZzKlc4EPh3SrSypKFdk6JUF/UccaZU=",
    "GXIElfmnRuWfbA4z7ubV/UwlpSRUbUeec7oL5HDDnh0=",
    "pR0SH/NYP6s9+8azWwaeUXA4Ze/3WCIgMfh5YW6wvcE=",
    "f3GuAKYVrF8RBg3s15jvA/YvV9oAliWtzP/imwPhQVA=",
    "WHn8zDxlVgkV+lSlmzaOdfSBrTHoRr5nT3d76q0KKWE=",
    "f2uV2ZxVgULzLPKuZcowRY3ZY7fRlX59iDBjV1R8kNQ=",
    "NzQVjJsvQwbi7WStMr9oFkh9VbHfK7LB6o7WwAqwNTs=",
    "C0LttBeYHZHgL+032JIcJC3CTBIyza/hsbmJUgJfmDI=",
    "nixU5CWTFVDlF4BGdcU6kA7WSYurEpe9jRWc+F/7sOc=",
  ],
};

describe("a real CT log, Argon 2020 (golang.org/x/mod sumdb/tlog/testdata/argon2020)", () => {
  const leaf = leafHash(unb64(ARGON.leafInput));
  const root = unb64(ARGON.root);
  const audit = ARGON.auditPath.map(unb64);
  const consistency = ARGON.consistency.map(unb64);
  const oldRoot = unb64(ARGON.oldRoot);

  it("verifies entry 10000's audit path against the signed tree head of 961984013 entries", () => {
    expect(verifyInclusion(leaf, ARGON.leafIndex, ARGON.size, audit, root)).toBe(true);
    expect(verifyInclusion(leaf, ARGON.leafIndex + 1, ARGON.size, audit, root)).toBe(false);
    // verify_test.go's wrong tree heights. (Size - 1 is not among them: RFC 9162's algorithm binds
    // the size only as far as the path's shape, and here size - 1 has the same shape.)
    expect(verifyInclusion(leaf, ARGON.leafIndex, ARGON.size * 2, audit, root)).toBe(false);
    expect(verifyInclusion(leaf, ARGON.leafIndex, Math.floor(ARGON.size / 2), audit, root)).toBe(false);
    expect(verifyInclusion(leaf, ARGON.leafIndex, ARGON.size, flipped(audit, 17, 31), root)).toBe(false);
    expect(verifyInclusion(leafHash(unb64(ARGON.leafInput).slice(1)), ARGON.leafIndex, ARGON.size, audit, root)).toBe(false);
  });

  it("verifies the log's consistency proof from 3654490 to 961984013", () => {
    expect(verifyConsistency(ARGON.oldSize, ARGON.size, consistency, oldRoot, root)).toBe(true);
    expect(verifyConsistency(ARGON.oldSize + 1, ARGON.size, consistency, oldRoot, root)).toBe(false);
    expect(verifyConsistency(ARGON.oldSize, ARGON.size * 2, consistency, oldRoot, root)).toBe(false);
    expect(verifyConsistency(ARGON.oldSize, Math.floor(ARGON.size / 2), consistency, oldRoot, root)).toBe(false);
    expect(verifyConsistency(ARGON.oldSize, ARGON.size, flipped(consistency, 0, 5), oldRoot, root)).toBe(false);
    expect(verifyConsistency(ARGON.oldSize, ARGON.size, consistency, root, oldRoot)).toBe(false);
  });

  it("asks for proofs of the log's own shape: 30 elements each, the same 8 subtrees on the right", () => {
    const inclusion = inclusionRanges(ARGON.leafIndex, ARGON.size);
    const cons = consistencyRanges(ARGON.oldSize, ARGON.size);
    expect([inclusion.length, cons.length]).toEqual([ARGON.auditPath.length, ARGON.consistency.length]);
    // The log's two proofs end in the same 8 hashes; ours in the same 8 ranges.
    expect(ARGON.auditPath.slice(-8)).toEqual(ARGON.consistency.slice(-8));
    expect(inclusion.slice(-8)).toEqual(cons.slice(-8));
    expect(inclusion.slice(-9, -8)).not.toEqual(cons.slice(-9, -8));
  });
});

// ---------------------------------------------------------------------------------------------
// C2SP signed-note with a key: golang.org/x/mod sumdb/note/note_test.go (TestNewVerifier,
// TestNewSigner, TestSign, TestOpen). A private key is PRIVATE+KEY+<name>+<id>+base64(0x01 || seed).
// ---------------------------------------------------------------------------------------------
/** The 33 bytes of a private key: its algorithm byte, then the Ed25519 seed. */
const privateKeyBytes = (skey: string) => unb64(skey.split("+").slice(4).join("+"));
const publicKeyOf = (vkey: string) => unb64(vkey.split("+").slice(2).join("+")).slice(1);

describe("C2SP signed note, Ed25519 (golang.org/x/mod sumdb/note/note_test.go)", () => {
  it("reads the private key as algorithm 0x01 then the 32-byte seed of the verifier key", () => {
    const bytes = privateKeyBytes(PETER.skey);
    expect([bytes.length, bytes[0]]).toEqual([33, 0x01]);
    expect(hex(ed.getPublicKey(bytes.slice(1)))).toBe(hex(publicKeyOf(PETER.vkey)));
  });

  it("gives the vector's key ID and verifier key", () => {
    const publicKey = ed.getPublicKey(privateKeyBytes(PETER.skey).slice(1));
    expect(hex(keyIdOf(PETER.name, NOTE_SIGNATURE, publicKey))).toBe(PETER.keyId);
    expect(vkeyOf(PETER.name, publicKey)).toBe(PETER.vkey);
    const parsed = parseVkey(PETER.vkey);
    expect([parsed.name, parsed.type, hex(parsed.keyId), hex(parsed.publicKey)]).toEqual([PETER.name, 1, PETER.keyId, hex(publicKey)]);
  });

  it("refuses the manglings of TestNewVerifier", () => {
    // Wrong length key and unknown algorithm, each with its key hash adjusted.
    expect(() => parseVkey("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==")).toThrow();
    expect(() => parseVkey("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")).toThrow();
    // Every character changed by one, as the Go test does.
    for (let i = 0; i < PETER.vkey.length; i++) {
      const mangled = PETER.vkey.slice(0, i) + String.fromCharCode(PETER.vkey.charCodeAt(i) + 1) + PETER.vkey.slice(i + 1);
      expect(() => parseVkey(mangled), mangled).toThrow();
    }
  });

  it("signs the vector's text into the vector's signature line, byte for byte", () => {
    const seed = privateKeyBytes(PETER.skey).slice(1);
    const keyId = keyIdOf(PETER.name, NOTE_SIGNATURE, ed.getPublicKey(seed));
    expect(signatureLine(PETER.name, keyId, ed.sign(utf8(PETER.text), seed))).toBe(PETER.signature);
  });

  it("opens the vector's note, and refuses it tampered", () => {
    const peter = parseVkey(PETER.vkey);
    const note = parseNote(`${PETER.text}\n${PETER.signature}${ENOCH.signature}`);
    expect(note.body).toBe(PETER.text);
    expect(note.signatures.map((s) => [s.name, hex(s.keyId)])).toEqual([
      ["PeterNeumann", "c74f20a3"],
      ["EnochRoot", "af0cfe78"],
    ]);
    expect(hasValidSignature(note, peter)).toBe(true);
    // TestOpen's invalid signature, misnamed signature and wrong hash.
    expect(hasValidSignature(parseNote(`${PETER.text}\n${PETER.signature.slice(0, 60)}ABCD${PETER.signature.slice(60)}`), peter)).toBe(false);
    expect(hasValidSignature(parseNote(`${PETER.text}\n${PETER.signature.replaceAll("PeterNeumann", "CarmenSandiego")}`), peter)).toBe(false);
    expect(hasValidSignature(parseNote(`${PETER.text}\n${PETER.signature.replaceAll("x08g", "xxxx")}`), peter)).toBe(false);
    // The text changed by one character.
    expect(hasValidSignature(parseNote(`${PETER.text.replace("answer", "Answer")}\n${PETER.signature}`), peter)).toBe(false);
  });

  it("refuses TestOpen's malformed notes", () => {
    const text = PETER.text;
    const sig = PETER.signature;
    for (const bad of [
      text,
      `${text}\n${sig.slice(0, -1)}`,
      `\u0001${text}\n${sig}`,
      `${text}\n\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${text}\n${sig}Unexpected line.\n`,
    ]) {
      expect(() => parseNote(bad), JSON.stringify(bad)).toThrow();
    }
    // The refusal says which rule of the spec the text breaks.
    expect(() => parseNote(`\u0001${text}\n${sig}`)).toThrow("a signed note holds no control character but the newline");
  });
});

// ---------------------------------------------------------------------------------------------
// The C2SP specifications' own examples: signed-note.md (a note whose text holds a blank line)
// and tlog-checkpoint.md (a checkpoint). Their keys are not published: parsed, not verified.
// ---------------------------------------------------------------------------------------------
const SPEC_NOTE =
  "Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n\n\u2014 quasimodo.example/salvatore NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n";
const SPEC_CHECKPOINT =
  "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n";

describe("C2SP spec examples (C2SP/C2SP signed-note.md, tlog-checkpoint.md)", () => {
  it("splits signed-note.md's example at the last blank line: the text keeps its own blank line", () => {
    const note = parseNote(SPEC_NOTE);
    expect(note.body).toBe("Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n");
    expect(note.signatures).toHaveLength(1);
    const [sig] = note.signatures;
    const raw = unb64("NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=");
    expect([sig!.name, hex(sig!.keyId), hex(sig!.signature)]).toEqual(["quasimodo.example/salvatore", hex(raw.slice(0, 4)), hex(raw.slice(4))]);
    expect(sig!.signature).toHaveLength(64);
  });

  it("parses tlog-checkpoint.md's example and writes its body back byte for byte", () => {
    const note = parseNote(SPEC_CHECKPOINT);
    expect(note.body).toBe("example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n");
    const checkpoint = parseCheckpointBody(note.body);
    expect([checkpoint.origin, checkpoint.size, hex(checkpoint.root), checkpoint.extensions]).toEqual([
      "example.com/behind-the-sofa",
      20852163,
      hex(unb64("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")),
      [],
    ]);
    expect(checkpointBody(checkpoint)).toBe(note.body);
    expect([note.signatures[0]!.name, note.signatures[0]!.signature.length]).toEqual(["example.com/behind-the-sofa", 64]);
  });

  it("refuses what tlog-checkpoint.md forbids: a size with a leading zero, an empty extension line", () => {
    expect(() => parseCheckpointBody("example.com/behind-the-sofa\n020852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")).toThrow();
    expect(() => parseCheckpointBody("example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\nextension\n")).toThrow(
      "a checkpoint's extension lines are not empty",
    );
    expect(() => parseCheckpointBody("\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")).toThrow();
  });
});

// ---------------------------------------------------------------------------------------------
// A signed log with a published key: the go.sum database test log of golang.org/x/mod
// sumdb/client_test.go (testVerifierKey, testSignerKey, newTestClient's records, TestClientFork's
// SECURITY ERROR text), and sumdb/tlog/note_test.go (TestFormatTree, TestParseTree).
// ---------------------------------------------------------------------------------------------
const SUMDB = {
  name: "localhost.localdev/sumdb",
  vkey: "localhost.localdev/sumdb+00000c67+AcTrnkbUA+TU4heY3hkjiSES/DSQniBqIeQ/YppAUtK6",
  skey: "PRIVATE+KEY+localhost.localdev/sumdb+00000c67+AXu6+oaVaOYuQOFrf1V59JK1owcFlJcHwwXHDfDGxSPk",
  origin: "go.sum database tree",
};
/** newTestClient's four records, then each fork's two (TestClientFork: tc, and tc2 forked from it). */
const SUMDB_RECORDS = [
  "rsc.io/quote v1.5.2 h1:w5fcysjrx7yqtD/aO+QwRjYZOKnaM9Uh2b40tElTs3Y=\nrsc.io/quote v1.5.2/go.mod h1:LzX7hefJvL54yjefDEDHNONDjII0t9xZLPXsUe+TKr0=\nrsc.io/quote v1.5.2 h2:xyzzy\n",
  "golang.org/x/text v0.0.0-20170915032832-14c0d48ead0c h1:qgOY6WgZOaTkIIMiVjBQcw93ERBE4m30iBm00nkL0i8=\ngolang.org/x/text v0.0.0-20170915032832-14c0d48ead0c/go.mod h1:NqM8EUOU14njkJ3fqMW+pc6Ldnwhi/IjpwHt7yyuwOQ=\n",
  "rsc.io/sampler v1.3.0 h1:7uVkIFmeBqHfdjD+gZwtXXI+RODJ2Wc4O7MPEh/QiW4=\nrsc.io/sampler v1.3.0/go.mod h1:T1hPZKmBbMNahiBKFy5HrXp6adAjACjK9JXDnKaTXpA=\n",
  "rsc.io/Quote v1.5.2 h1:uppercase!=\n",
];
const TC = [...SUMDB_RECORDS, "rsc.io/pkg1 v1.5.2 h1:hash!=\n", "rsc.io/pkg1 v1.5.4 h1:hash!=\n"];
const TC2 = [...SUMDB_RECORDS, "rsc.io/pkg1 v1.5.3 h1:hash!=\n", "rsc.io/pkg1 v1.5.4 h1:hash!=\n"];
// The SECURITY ERROR text: the old tree (tc at size 5) and the new one (tc2 at size 6), each
// signed, then the "proof of misbehavior": tc2's root at size 5, then the proof from 5 to 6.
// (The comment there heads the old tree "go.sum database tree!"; the test's own `wants` and the
// signature both say "go.sum database tree".)
const OLD_NOTE =
  "go.sum database tree\n5\nnWzN20+pwMt62p7jbv1/NlN95ePTlHijabv5zO/s36w=\n\n\u2014 localhost.localdev/sumdb AAAMZ5/2FVAdMH58kmnz/0h299pwyskEbzDzoa2/YaPdhvLya4YWDFQQxu2TQb5GpwAH4NdWnTwuhILafisyf3CNbgg=\n";
const NEW_NOTE =
  "go.sum database tree\n6\nwc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=\n\n\u2014 localhost.localdev/sumdb AAAMZ6oRNswlEZ6ZZhxrCvgl1MBy+nusq4JU+TG6Fe2NihWLqOzb+y2c2kzRLoCr4tvw9o36ucQEnhc20e4nA4Qc/wc=\n";
const MISBEHAVIOR = [
  "T7i+H/8ER4nXOiw4Bj0koZOkGjkxoNvlI34GpvhHhQg=",
  "Nsuejv72de9hYNM5bqFv8rv3gm3zJQwv/DT/WNbLDLA=",
  "mOmqqZ1aI/lzS94oq/JSbj7pD8Rv9S+xDyi12BtVSHo=",
  "/7Aw5jVSMM9sFjQhaMg+iiDYPMk6decH7QLOGrL9Lx0=",
];
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

describe("the go.sum database test log (golang.org/x/mod sumdb/client_test.go, sumdb/tlog/note_test.go)", () => {
  const seed = privateKeyBytes(SUMDB.skey).slice(1);

  it("hashes a record and writes the tree note of TestFormatTree, and parses it back", () => {
    const golden = "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n";
    const hash = leafHash(utf8("hello world"));
    expect(b64(hash)).toBe("TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=");
    expect(checkpointBody({ origin: SUMDB.origin, size: 123456789012, root: hash })).toBe(golden);
    const parsed = parseCheckpointBody(golden);
    expect([parsed.origin, parsed.size, b64(parsed.root)]).toEqual([SUMDB.origin, 123456789012, "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0="]);
    // TestParseTree's bad trees that are bad for any checkpoint.
    expect(() => parseCheckpointBody("go.sum database tree\n0xabcdef\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n")).toThrow();
    expect(() => parseCheckpointBody("go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n")).toThrow();
  });

  it("gives the test key's vanity key ID 00000c67", () => {
    const publicKey = ed.getPublicKey(seed);
    expect(hex(publicKey)).toBe(hex(publicKeyOf(SUMDB.vkey)));
    expect(hex(keyIdOf(SUMDB.name, NOTE_SIGNATURE, publicKey))).toBe("00000c67");
    expect(vkeyOf(SUMDB.name, publicKey)).toBe(SUMDB.vkey);
    expect(hex(parseVkey(SUMDB.vkey).keyId)).toBe("00000c67");
  });

  it("computes the roots both forks signed from their records", () => {
    const tc = TC.map((r) => leafHash(utf8(r)));
    const tc2 = TC2.map((r) => leafHash(utf8(r)));
    expect(b64(rootOfLeaves(tc.slice(0, 5)))).toBe("nWzN20+pwMt62p7jbv1/NlN95ePTlHijabv5zO/s36w=");
    expect(b64(rootOfLeaves(tc2))).toBe("wc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=");
    expect(b64(rootOfLeaves(tc2.slice(0, 5)))).toBe(MISBEHAVIOR[0]);
  });

  it("verifies both signed tree notes, and signs each again byte for byte (Ed25519 is deterministic)", () => {
    const verifier = parseVkey(SUMDB.vkey);
    for (const text of [OLD_NOTE, NEW_NOTE]) {
      const note = parseNote(text);
      expect(hasValidSignature(note, verifier)).toBe(true);
      expect(signCheckpoint(parseCheckpointBody(note.body), SUMDB.name, seed)).toBe(text);
      // One size changed, or signed by another key: refused.
      expect(hasValidSignature(parseNote(text.replace(/\n[56]\n/, "\n7\n")), verifier)).toBe(false);
      expect(hasValidSignature(note, parseVkey(PETER.vkey))).toBe(false);
    }
    expect(hasValidSignature(parseNote(OLD_NOTE.replace("tree\n", "tree!\n")), verifier)).toBe(false);
  });

  it("builds the proof of misbehavior from 5 to 6 and catches the fork with it", async () => {
    const proof = await consistencyProof(memoryLog(TC2.map(utf8)), 5, 6);
    expect(proof).toEqual(MISBEHAVIOR.slice(1));
    const newRoot = unb64("wc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=");
    // tc2's own tree at 5 extends to 6; tc's tree at 5, which tc2's log also signed as 5, does not.
    expect(verifyConsistency(5, 6, proof.map(unb64), unb64(MISBEHAVIOR[0]!), newRoot)).toBe(true);
    expect(verifyConsistency(5, 6, proof.map(unb64), unb64("nWzN20+pwMt62p7jbv1/NlN95ePTlHijabv5zO/s36w="), newRoot)).toBe(false);
  });
});

/**
 * The city's own outside verifier (lib/tlog/verifying-client.ts) on the go.sum test log of 6 records,
 * served as tlog-tiles: the root it recomputes from the tiles must be the one Go's log signed.
 * Tiles are leaf hashes written with node:crypto; entry bundles are uint16-length-prefixed records.
 */
describe("the city's verifier on the go.sum test log, served as tiles", () => {
  const seed = privateKeyBytes(SUMDB.skey).slice(1);
  const records = TC2.map(utf8);
  const refLeaf = (data: Uint8Array) =>
    createHash("sha256")
      .update(Buffer.concat([Buffer.of(0), data]))
      .digest();
  const tile = Buffer.concat(records.map(refLeaf));
  const bundle = Buffer.concat(records.flatMap((r) => [Buffer.from([r.length >> 8, r.length & 0xff]), Buffer.from(r)]));
  const root = unb64("wc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=");

  function serve(note: string, vkey: string, overrides: Record<string, Uint8Array | string> = {}) {
    const files: Record<string, Uint8Array | string> = {
      "/city-card.json": JSON.stringify({ log: { verifier_key: vkey } }),
      "/api/residency/log/checkpoint": note,
      "/api/residency/log/tile/0/000.p/6": tile,
      "/api/residency/log/tile/entries/000.p/6": bundle,
      "/api/residency/log/consistency?from=5&to=6": JSON.stringify({ proof: MISBEHAVIOR.slice(1) }),
      ...overrides,
    };
    return async (url: string) => {
      const path = url.replace("https://sumdb.example", "");
      const body = files[path];
      return body === undefined ? new Response("not found", { status: 404 }) : new Response(typeof body === "string" ? body : Buffer.from(body));
    };
  }

  it("takes the signed root as recomputed from the tiles, and tc2's earlier tree as extended by it", async () => {
    // Go's note has origin "go.sum database tree" under the key name localhost.localdev/sumdb; a city
    // log's origin is its key's name, so the same root and key are signed here under that name.
    const body = checkpointBody({ origin: SUMDB.name, size: 6, root });
    const note = signCheckpoint({ origin: SUMDB.name, size: 6, root }, SUMDB.name, seed);
    expect(note.startsWith(body)).toBe(true);
    const first = await verifyTransparencyLog("https://sumdb.example", { vkey: SUMDB.vkey, fetch: serve(note, SUMDB.vkey) });
    expect(first.ok, first.lines.join("\n")).toBe(true);
    expect(first.state).toEqual({ vkey: SUMDB.vkey, size: 6, root: "wc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=" });
    const extended = await verifyTransparencyLog("https://sumdb.example", {
      state: { vkey: SUMDB.vkey, size: 5, root: MISBEHAVIOR[0]! },
      fetch: serve(note, SUMDB.vkey),
    });
    expect(extended.ok, extended.lines.join("\n")).toBe(true);
    // tc's tree of 5: the fork TestClientFork detects.
    const forked = await verifyTransparencyLog("https://sumdb.example", {
      state: { vkey: SUMDB.vkey, size: 5, root: "nWzN20+pwMt62p7jbv1/NlN95ePTlHijabv5zO/s36w=" },
      fetch: serve(note, SUMDB.vkey),
    });
    expect(forked.ok).toBe(false);
    expect(forked.lines.at(-1)).toMatch(/a fork/);
    // One record changed in the bundle: its leaf no longer matches the tile.
    const changed = Buffer.from(bundle);
    changed.writeUInt8(changed.readUInt8(changed.length - 3) ^ 1, changed.length - 3);
    const tampered = await verifyTransparencyLog("https://sumdb.example", {
      vkey: SUMDB.vkey,
      fetch: serve(note, SUMDB.vkey, { "/api/residency/log/tile/entries/000.p/6": changed }),
    });
    expect(tampered.ok).toBe(false);
  });

  it("refuses Go's own note: a valid signature, but an origin that is not the key's name", async () => {
    const report = await verifyTransparencyLog("https://sumdb.example", { vkey: SUMDB.vkey, fetch: serve(NEW_NOTE, SUMDB.vkey) });
    expect(report.ok).toBe(false);
    expect(report.lines.at(-1)).toMatch(/origin go\.sum database tree is not the key's name localhost\.localdev\/sumdb/);
  });
});

// ---------------------------------------------------------------------------------------------
// C2SP tlog-tiles.md: tile/<L>/<N>[.p/<W>] and tile/entries/<N>[.p/<W>]; N in zero-padded
// 3-digit elements, all but the last prefixed with x ("index 1234067 will be encoded as
// x001/x234/067"); L decimal without leading zeroes; W from 1 to 255 without leading zeroes,
// present only for partial tiles; full tiles exactly 256 hashes.
// ---------------------------------------------------------------------------------------------
describe("tile paths (C2SP tlog-tiles.md)", () => {
  it("encodes the spec's index 1234067 as x001/x234/067", () => {
    expect(encodeTileIndex(1234067)).toBe("x001/x234/067");
    expect(tilePathOf({ kind: "hashes", level: 0, index: 1234067, width: 256 })).toBe("tile/0/x001/x234/067");
    expect(tilePathOf({ kind: "entries", level: 0, index: 1234067, width: 256 })).toBe("tile/entries/x001/x234/067");
  });

  it("writes .p/<W> only on partial tiles (the spec's tree of 70,000: level 0 partial tile 273 of width 112, level 1 tile 1 of 17, level 2 tile 0 of 1)", () => {
    expect(tilePathOf({ kind: "hashes", level: 0, index: 273, width: 112 })).toBe("tile/0/273.p/112");
    expect(tilePathOf({ kind: "entries", level: 0, index: 273, width: 112 })).toBe("tile/entries/273.p/112");
    expect(tilePathOf({ kind: "hashes", level: 1, index: 1, width: 17 })).toBe("tile/1/001.p/17");
    expect(tilePathOf({ kind: "hashes", level: 2, index: 0, width: 1 })).toBe("tile/2/000.p/1");
    expect(tilePathOf({ kind: "hashes", level: 1, index: 0, width: 256 })).toBe("tile/1/000");
  });

  it("parses the spec's paths (below tile/)", () => {
    expect(parseTilePath("0/x001/x234/067")).toEqual({ kind: "hashes", level: 0, index: 1234067, width: 256 });
    expect(parseTilePath("entries/x001/x234/067")).toEqual({ kind: "entries", level: 0, index: 1234067, width: 256 });
    expect(parseTilePath("0/273.p/112")).toEqual({ kind: "hashes", level: 0, index: 273, width: 112 });
    expect(parseTilePath("1/001.p/17")).toEqual({ kind: "hashes", level: 1, index: 1, width: 17 });
    expect(parseTilePath("2/000.p/1")).toEqual({ kind: "hashes", level: 2, index: 0, width: 1 });
    expect(parseTilePath("0/000.p/255")).toEqual({ kind: "hashes", level: 0, index: 0, width: 255 });
    expect(parseTilePath("entries/273.p/112")).toEqual({ kind: "entries", level: 0, index: 273, width: 112 });
  });

  it.each([
    ["x1234", "an index not in 3-digit elements"],
    ["0/x1234", "an index not in 3-digit elements"],
    ["0/1234067", "an index not in 3-digit elements"],
    ["0/x001/x234/67", "a last element of 2 digits"],
    ["0/001/234/067", "elements before the last without x"],
    ["0/x001/x234/x067", "an x on the last element"],
    ["0/x000/001", "a longer spelling than needed (the city takes only the canonical one)"],
    ["00/000", "a level with a leading zero"],
    ["01/000", "a level with a leading zero"],
    ["0/000.p/0", "width 0"],
    ["0/000.p/256", "width 256 (a full tile has no suffix)"],
    ["0/000.p/016", "a width with a leading zero"],
    ["0/000.p/", "an empty width"],
    ["entries/000.p/0", "width 0 of an entry bundle"],
    ["entries/000.p/256", "width 256 of an entry bundle"],
    ["-1/000", "a negative level"],
  ])("refuses %j (%s)", (path) => {
    expect(() => parseTilePath(path)).toThrow(/No such tile/);
  });
});
