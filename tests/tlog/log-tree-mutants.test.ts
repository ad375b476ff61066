import { describe, expect, it } from "vitest";
import {
  appendLeaf,
  consistencyRanges,
  EMPTY_ROOT,
  equalHashes,
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
import { mth, refLeaf, refPath, refProof, refSplit } from "../support/rfc9162-reference";

/**
 * The RFC 9162 tree (lib/tlog/tree.ts) against fixed vectors (computed with Python's hashlib,
 * written here as literals) and against the RFC's recursive definitions of MTH, PATH and PROOF
 * (tests/support/rfc9162-reference.ts, node:crypto): never against the code judged. Part of the mutation run
 * (vitest.mutation.config.mts): every mutant of the module is caught here or listed as equivalent
 * in docs/testing.md.
 */
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const DATA = Array.from({ length: 33 }, (_, i) => Uint8Array.of(i));
const LEAVES = DATA.map(refLeaf);

describe("hashes (fixed vectors)", () => {
  it("hashes the empty tree, leaves and nodes with the RFC 9162 prefixes", () => {
    expect(hex(EMPTY_ROOT)).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(hex(leafHash(new Uint8Array(0)))).toBe("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
    expect(hex(leafHash(new TextEncoder().encode("abc")))).toBe("609f6e36d2405585188d5cfd761f407c7cc46a7d3f314c88270469dde315fcd1");
    expect(hex(nodeHash(new Uint8Array(32), new Uint8Array(32).fill(0xff)))).toBe("bc6b943b820c449acf880d293c216a24a8066b153f87f2361fae2beda3a72641");
  });

  it("names a node level/index", () => {
    expect(nodeKey({ level: 3, index: 17 })).toBe("3/17");
  });

  it("computes the roots of the fixed trees of leaves 0x00, 0x01, ...", () => {
    const roots: Record<number, string> = {
      0: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      1: "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      2: "a20bf9a7cc2dc8a08f5f415a71b19f6ac427bab54d24eec868b5d3103449953a",
      3: "3b6cccd7e3e023ff393006f030315ee7ad9eb111b022b41fba7e5b7a3973f688",
      5: "b855b42d6c30f5b087e05266783fbd6e394f7b926013ccaa67700a8b0c5a596f",
      7: "3560191803028444b232018ac047fdb561c09c23a7a6876c85e08b5e4d48e9f3",
      8: "ef7f49b620f6c7ea9b963a214da34b5021c6ded8ed57734380a311ab726aa907",
    };
    for (const [n, root] of Object.entries(roots)) expect(hex(rootOfLeaves(LEAVES.slice(0, Number(n)))), `size ${n}`).toBe(root);
  });

  it("compares hashes byte by byte, lengths included", () => {
    expect(equalHashes(Uint8Array.of(1, 2), Uint8Array.of(1, 2))).toBe(true);
    expect(equalHashes(Uint8Array.of(1, 2), Uint8Array.of(1, 3))).toBe(false);
    expect(equalHashes(Uint8Array.of(1, 2), Uint8Array.of(1, 2, 3))).toBe(false);
    expect(equalHashes(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2))).toBe(false);
  });
});

describe("ranges and stored nodes (fixed vectors)", () => {
  it("splits a range into its perfect subtrees, largest first", () => {
    expect(rangeNodes(0, 7)).toEqual([
      { level: 2, index: 0 },
      { level: 1, index: 2 },
      { level: 0, index: 6 },
    ]);
    expect(rangeNodes(0, 8)).toEqual([{ level: 3, index: 0 }]);
    expect(rangeNodes(4, 8)).toEqual([{ level: 2, index: 1 }]);
    expect(rangeNodes(6, 13)).toEqual([
      { level: 1, index: 3 },
      { level: 2, index: 2 },
      { level: 0, index: 12 },
    ]);
    expect(rangeNodes(5, 5)).toEqual([]);
  });

  it("gives the ranges of an inclusion path (RFC 9162 2.1.5's tree of 7: d0 needs b, h, l)", () => {
    expect(inclusionRanges(0, 7)).toEqual([
      [1, 2],
      [2, 4],
      [4, 7],
    ]);
    expect(inclusionRanges(3, 7)).toEqual([
      [2, 3],
      [0, 2],
      [4, 7],
    ]);
    expect(inclusionRanges(4, 7)).toEqual([
      [5, 6],
      [6, 7],
      [0, 4],
    ]);
    expect(inclusionRanges(6, 7)).toEqual([
      [4, 6],
      [0, 4],
    ]);
    expect(inclusionRanges(0, 1)).toEqual([]);
  });

  it("gives the ranges of a consistency proof (RFC 9162 2.1.5: 3 to 7 is c, d, g, l; 4 to 7 is l; 6 to 7 is i, j, k)", () => {
    expect(consistencyRanges(3, 7)).toEqual([
      [2, 3],
      [3, 4],
      [0, 2],
      [4, 7],
    ]);
    expect(consistencyRanges(4, 7)).toEqual([[4, 7]]);
    expect(consistencyRanges(6, 7)).toEqual([
      [4, 6],
      [6, 7],
      [0, 4],
    ]);
    expect(consistencyRanges(0, 7)).toEqual([]);
    expect(consistencyRanges(7, 7)).toEqual([]);
    expect(consistencyRanges(8, 7)).toEqual([]);
  });

  it("lists the stored nodes a list of ranges folds", () => {
    expect(
      nodesOfRanges([
        [2, 3],
        [4, 7],
      ]),
    ).toEqual([
      { level: 0, index: 2 },
      { level: 1, index: 2 },
      { level: 0, index: 6 },
    ]);
    expect(nodesOfRanges([])).toEqual([]);
  });

  it("hashes every range an RFC 9162 split makes from stored perfect subtrees as MTH of that range", () => {
    const stored = (id: { level: number; index: number }) => mth(DATA.slice(id.index * 2 ** id.level, (id.index + 1) * 2 ** id.level));
    // A split's range [start, end) starts at a multiple of the smallest power of two >= its length.
    const aligned = (start: number, end: number) => start % (2 * refSplit(end - start)) === 0 || end - start <= 1;
    for (let start = 0; start <= 20; start++) {
      for (let end = start; end <= 20; end++)
        if (aligned(start, end)) expect(hex(rangeHash(start, end, stored)), `${start}..${end}`).toBe(hex(mth(DATA.slice(start, end))));
    }
    expect(hex(rangeHash(5, 3, stored))).toBe(hex(EMPTY_ROOT));
  });
});

describe("appending", () => {
  it("returns the nodes an append completes and the new right edge (fixed vector: the 8th leaf)", () => {
    let edge: Uint8Array[] = [];
    for (let i = 0; i < 7; i++) edge = appendLeaf(edge, i, LEAVES[i]!).edge;
    expect(edge.map(hex)).toEqual([hex(mth(DATA, 4)), hex(mth(DATA.slice(4, 6))), hex(LEAVES[6]!)]);
    const { nodes, edge: after } = appendLeaf(edge, 7, LEAVES[7]!);
    expect(nodes.map((n) => [n.level, n.index, hex(n.hash)])).toEqual([
      [0, 7, hex(LEAVES[7]!)],
      [1, 3, hex(mth(DATA.slice(6, 8)))],
      [2, 1, hex(mth(DATA.slice(4, 8)))],
      [3, 0, "ef7f49b620f6c7ea9b963a214da34b5021c6ded8ed57734380a311ab726aa907"],
    ]);
    expect(after.map(hex)).toEqual(["ef7f49b620f6c7ea9b963a214da34b5021c6ded8ed57734380a311ab726aa907"]);
    // The edge given is not changed.
    expect(edge).toHaveLength(3);
    expect(appendLeaf(after, 8, LEAVES[8]!).nodes).toHaveLength(1);
  });

  it("folds the root of an edge and of every list of leaves as MTH", () => {
    expect(hex(rootOfEdge([]))).toBe(hex(EMPTY_ROOT));
    expect(hex(rootOfEdge([Uint8Array.of(7)]))).toBe("07");
    for (let n = 0; n <= LEAVES.length; n++) expect(hex(rootOfLeaves(LEAVES.slice(0, n))), `size ${n}`).toBe(hex(mth(DATA, n)));
  });
});

describe("inclusion proofs (RFC 9162 2.1.3.2)", () => {
  it("accepts the RFC's path for every leaf of every size up to 33", () => {
    for (let n = 1; n <= LEAVES.length; n++) {
      const root = mth(DATA, n);
      for (let m = 0; m < n; m++) expect(verifyInclusion(LEAVES[m]!, m, n, refPath(m, DATA, n), root), `${m} in ${n}`).toBe(true);
    }
  });

  it("refuses a wrong index, leaf, root or a proof one hash short or long", () => {
    for (let n = 1; n <= 20; n++) {
      const root = mth(DATA, n);
      for (let m = 0; m < n; m++) {
        const proof = refPath(m, DATA, n);
        const at = `${m} in ${n}`;
        if (n > 1) expect(verifyInclusion(LEAVES[m]!, (m ^ 1) < n ? m ^ 1 : m - 1, n, proof, root), at).toBe(false);
        expect(verifyInclusion(LEAVES[m]!, m, n, [...proof, root], root), at).toBe(false);
        if (proof.length > 0) expect(verifyInclusion(LEAVES[m]!, m, n, proof.slice(0, -1), root), at).toBe(false);
        expect(verifyInclusion(LEAVES[m + 1]!, m, n, proof, root), at).toBe(false);
        expect(verifyInclusion(LEAVES[m]!, m, n, proof, mth(DATA, n + 1)), at).toBe(false);
      }
    }
  });

  it("refuses an index outside the tree", () => {
    const root = mth(DATA, 4);
    expect(verifyInclusion(LEAVES[0]!, -1, 4, refPath(0, DATA, 4), root)).toBe(false);
    expect(verifyInclusion(LEAVES[4]!, 4, 4, refPath(3, DATA, 4), root)).toBe(false);
    expect(verifyInclusion(LEAVES[0]!, 0, 0, [], EMPTY_ROOT)).toBe(false);
    // Index = size: the leaf as its own root would pass the fold.
    expect(verifyInclusion(LEAVES[0]!, 1, 1, [], LEAVES[0]!)).toBe(false);
    expect(verifyInclusion(LEAVES[0]!, 0, 1, [], LEAVES[0]!)).toBe(true);
  });
});

describe("consistency proofs (RFC 9162 2.1.4.2)", () => {
  it("accepts the RFC's proof between every two sizes up to 33", () => {
    for (let n = 1; n <= LEAVES.length; n++) {
      for (let m = 1; m <= n; m++) {
        expect(verifyConsistency(m, n, refProof(m, DATA, n), mth(DATA, m), mth(DATA, n)), `${m} to ${n}`).toBe(true);
      }
    }
  });

  it("refuses a wrong root or a proof one hash short, long or changed", () => {
    for (let n = 2; n <= 20; n++) {
      for (let m = 1; m < n; m++) {
        const proof = refProof(m, DATA, n);
        const r1 = mth(DATA, m);
        const r2 = mth(DATA, n);
        const at = `${m} to ${n}`;
        expect(verifyConsistency(m, n, proof, r2, r2), at).toBe(false);
        expect(verifyConsistency(m, n, proof, r1, r1), at).toBe(false);
        expect(verifyConsistency(m, n, [...proof, r1], r1, r2), at).toBe(false);
        expect(verifyConsistency(m, n, proof.slice(0, -1), r1, r2), at).toBe(false);
        expect(verifyConsistency(m, n, proof.slice(1), r1, r2), at).toBe(false);
        for (let i = 0; i < proof.length; i++) {
          const changed = proof.map((p, j) => (j === i ? r2 : p));
          expect(verifyConsistency(m, n, changed, r1, r2), `${at}, hash ${i} changed`).toBe(false);
        }
      }
    }
  });

  it("holds the edge cases: equal sizes, size 0, a larger first size, a negative size, an empty proof", () => {
    const r4 = mth(DATA, 4);
    const r5 = mth(DATA, 5);
    expect(verifyConsistency(4, 4, [], r4, r4)).toBe(true);
    expect(verifyConsistency(4, 4, [], r4, r5)).toBe(false);
    expect(verifyConsistency(4, 4, [r4], r4, r4)).toBe(false);
    expect(verifyConsistency(0, 4, [], EMPTY_ROOT, r4)).toBe(true);
    expect(verifyConsistency(0, 4, [r4], EMPTY_ROOT, r4)).toBe(false);
    expect(verifyConsistency(5, 4, [], r5, r4)).toBe(false);
    // A larger first size whose fold would pass: 2 to 1 with equal roots.
    expect(verifyConsistency(2, 1, [], r4, r4)).toBe(false);
    // A proof one hash short whose fold ends on a subtree, given that subtree as the second root.
    expect(verifyConsistency(1, 3, [LEAVES[1]!], LEAVES[0]!, mth(DATA, 2))).toBe(false);
    expect(verifyConsistency(1, 3, [LEAVES[1]!, LEAVES[2]!], LEAVES[0]!, mth(DATA, 3))).toBe(true);
    expect(verifyConsistency(-1, 4, [], EMPTY_ROOT, r4)).toBe(false);
    expect(verifyConsistency(-1, -1, [], r4, r4)).toBe(false);
    expect(verifyConsistency(3, 4, [], mth(DATA, 3), r4)).toBe(false);
    // A power-of-two first size: its root is the proof's first hash, not sent.
    expect(verifyConsistency(4, 5, [LEAVES[4]!], r4, r5)).toBe(true);
    expect(verifyConsistency(4, 5, [], r4, r5)).toBe(false);
  });
});
