import { describe, expect, it } from "vitest";
import { consistencyProof, entryBundle, hashTile, inclusionPath, inclusionProof, type LogStorage } from "@/lib/tlog/storage";
import { mth, refPath, refProof } from "../support/rfc9162-reference";

/**
 * lib/tlog/storage.ts (proofs and tiles read from a log's stored nodes) over an in-memory log whose
 * nodes are computed here by RFC 9162's MTH (tests/support/rfc9162-reference.ts, node:crypto
 * alone); the expected proofs are RFC 9162's PATH and PROOF from the same reference, never the
 * code judged. The storage records what it was asked, so a proof that reads the wrong nodes or a
 * tile the wrong level shows.
 */
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const leafData = (n: number) => Array.from({ length: n }, (_, i) => new Uint8Array(Buffer.from(`entry ${i}`)));

/** A log of `data` whose kept tree is its first `size` leaves (default all), keeping notes for `notes`. */
function memoryLog(data: Uint8Array[], options: { size?: number; notes?: Record<number, string> } = {}) {
  const size = options.size ?? data.length;
  const asked: { levels: Array<[number, number, number]>; leaves: Array<[number, number]>; notes: number[] } = { levels: [], leaves: [], notes: [] };
  const node = (level: number, index: number) => {
    const width = 2 ** level;
    return (index + 1) * width <= size ? mth(data.slice(index * width, (index + 1) * width)) : undefined;
  };
  const storage: LogStorage = {
    treeSize: async () => size,
    readNodes: async (ids) => new Map(ids.flatMap((id) => (node(id.level, id.index) ? [[`${id.level}/${id.index}`, node(id.level, id.index)!] as const] : []))),
    readLevel: async (level, first, count) => {
      asked.levels.push([level, first, count]);
      const out: Uint8Array[] = [];
      for (let i = first; i < first + count && node(level, i); i++) out.push(node(level, i)!);
      return out;
    },
    readLeaves: async (first, count) => {
      asked.leaves.push([first, count]);
      return data.slice(first, first + count);
    },
    heldNote: async (n) => {
      asked.notes.push(n);
      return options.notes?.[n] ?? null;
    },
  };
  return { storage, asked };
}

describe("inclusionProof", () => {
  it("gives RFC 9162's PATH for every entry of every tree up to 9, with the held note of that size", async () => {
    const data = leafData(9);
    const { storage, asked } = memoryLog(data, { notes: { 5: "note of five" } });
    for (let n = 1; n <= 9; n++)
      for (let seq = 1; seq <= n; seq++) {
        const got = await inclusionProof(storage, seq, n);
        expect(got).toEqual({ seq, leaf_index: seq - 1, tree_size: n, proof: refPath(seq - 1, data, n).map(b64), checkpoint: n === 5 ? "note of five" : null });
      }
    expect(asked.notes.at(-1)).toBe(9);
  });

  it("uses the latest size when none is given", async () => {
    const data = leafData(6);
    const { storage } = memoryLog(data, { notes: { 6: "latest" } });
    expect(await inclusionProof(storage, 2)).toEqual({ seq: 2, leaf_index: 1, tree_size: 6, proof: refPath(1, data, 6).map(b64), checkpoint: "latest" });
  });

  it("answers the size the log reached exactly, and refuses one past it and an entry past the size, each saying why", async () => {
    const { storage } = memoryLog(leafData(4));
    expect((await inclusionProof(storage, 4, 4)).tree_size).toBe(4);
    await expect(inclusionProof(storage, 1, 5)).rejects.toMatchObject({
      code: "bad_request",
      message: "size 5 is a size the log never reached (it has 4 rows in its tree).",
    });
    await expect(inclusionProof(storage, 4, 3)).rejects.toMatchObject({
      code: "bad_request",
      message: "row 4 is not in the tree of size 3: ask for a size of at least 4.",
    });
  });

  it("refuses to build a proof over a node the log does not hold, naming it", async () => {
    const data = leafData(4);
    const { storage } = memoryLog(data);
    const holes: LogStorage = { ...storage, readNodes: async (ids) => new Map([...(await storage.readNodes(ids))].filter(([k]) => k !== "1/1")) };
    await expect(inclusionProof(holes, 1, 4)).rejects.toThrow("the log tree has no node 1/1");
  });
});

describe("inclusionPath", () => {
  it("gives PATH(seq-1, D[0:size]) without asking the size or a note", async () => {
    const data = leafData(7);
    const { storage, asked } = memoryLog(data);
    for (let seq = 1; seq <= 7; seq++) expect(await inclusionPath(storage, seq, 7)).toEqual(refPath(seq - 1, data, 7).map(b64));
    expect(await inclusionPath(storage, 1, 1)).toEqual([]);
    expect(asked.notes).toEqual([]);
  });
});

describe("consistencyProof", () => {
  it("gives RFC 9162's PROOF for every pair of sizes up to 9", async () => {
    const data = leafData(9);
    const { storage } = memoryLog(data);
    for (let to = 0; to <= 9; to++)
      for (let from = 0; from <= to; from++) expect(await consistencyProof(storage, from, to)).toEqual(refProof(from, data, to).map(b64));
  });

  it("refuses from past to, and a to the log never reached, each saying why; to equal to the size is answered", async () => {
    const { storage } = memoryLog(leafData(5));
    await expect(consistencyProof(storage, 3, 2)).rejects.toMatchObject({ code: "bad_request", message: "from (3) is larger than to (2): a log only grows." });
    await expect(consistencyProof(storage, 2, 6)).rejects.toMatchObject({
      code: "bad_request",
      message: "to 6 is a size the log never reached (it has 5 rows in its tree).",
    });
    expect(await consistencyProof(storage, 2, 5)).toEqual(refProof(2, leafData(5), 5).map(b64));
    expect(await consistencyProof(storage, 3, 3)).toEqual([]);
  });
});

describe("tiles (C2SP tlog-tiles) of a tree of 600", () => {
  const data = leafData(600);
  const concat = (hashes: Uint8Array[]) => Buffer.concat(hashes).toString("hex");

  it("reads a level-L tile at node level 8L from index N*256, W hashes; null when fewer are held", async () => {
    const { storage, asked } = memoryLog(data);
    const tile = await hashTile(storage, 0, 2, 88);
    expect(Buffer.from(tile!).toString("hex")).toBe(concat(Array.from({ length: 88 }, (_, i) => mth(data.slice(512 + i, 513 + i)))));
    expect(asked.levels).toEqual([[0, 512, 88]]);
    expect(await hashTile(storage, 0, 2, 89)).toBeNull();
    const level1 = await hashTile(storage, 1, 0, 2);
    expect(Buffer.from(level1!).toString("hex")).toBe(concat([mth(data.slice(0, 256)), mth(data.slice(256, 512))]));
    expect(asked.levels.at(-1)).toEqual([8, 0, 2]);
    expect(await hashTile(storage, 1, 0, 3)).toBeNull();
  });

  it("bundles entries N*256 on, each behind its big-endian uint16 length; null when not all are held or the tree is smaller", async () => {
    const long = new Uint8Array(300).fill(7);
    const withLong = [...data.slice(0, 256), long, ...data.slice(257)];
    const { storage, asked } = memoryLog(withLong);
    const bundle = Buffer.from((await entryBundle(storage, 1, 2))!);
    expect(asked.leaves).toEqual([[256, 2]]);
    expect(bundle.toString("hex")).toBe(`012c${"07".repeat(300)}0009${Buffer.from("entry 257").toString("hex")}`);
    expect(await entryBundle(storage, 2, 88)).not.toBeNull();
    expect(await entryBundle(storage, 2, 89)).toBeNull();
    // The leaves are stored beyond the tree (not yet integrated): not served past the tree's size.
    const ahead = memoryLog(withLong, { size: 520 }).storage;
    expect(await entryBundle(ahead, 2, 8)).not.toBeNull();
    expect(await entryBundle(ahead, 2, 9)).toBeNull();
    // A storage that reached the size but misses a leaf's row (read short) serves no bundle either.
    const holed = memoryLog(withLong).storage;
    const short: LogStorage = { ...holed, readLeaves: async (first, count) => (await holed.readLeaves(first, count)).slice(0, -1) };
    expect(await entryBundle(short, 1, 2)).toBeNull();
  });
});
