import { createHash } from "node:crypto";
import { asc, desc } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { residencyLog } from "@/db/schema";
import { canonicalJson, sha256Hex } from "@/lib/city/canonical";
import { appendNow, leafDataOf, publishLogRow } from "@/lib/city/logs/residency-log";
import { encodeTileIndex, parseTilePath, tilePathOf } from "@/lib/tlog/tiles";
import { describeOnDatabases } from "../../support/databases";
import { cityFetch } from "../../support/log-city";
import { referenceRoot } from "../../support/log-reference";

/*
 * C2SP tlog-tiles on a log of more than one tile (300 rows), through the tile door: full tiles,
 * partial tiles older than the tree's edge, the level-1 tile and entry bundles, each compared with
 * what is computed here from the published rows (leaf hash = SHA-256(0x00 || leaf data), the
 * level-1 hash = the root of the first 256 leaves, RFC 9162), not with the city's own tree code.
 * The tile width (256) and the path spelling are written here too.
 */

const ROWS = 300;
const BASE = "http://city.test";
const tile = async (path: string) => {
  const answer = await cityFetch(`${BASE}/api/residency/log/tile/${path}`);
  return { status: answer.status, bytes: Buffer.from(await answer.arrayBuffer()) };
};
const leafHash = (data: Buffer) =>
  createHash("sha256")
    .update(Buffer.concat([Buffer.from([0]), data]))
    .digest();

describe("tile paths (C2SP tlog-tiles)", () => {
  it("writes the index in three-digit groups, x-prefixed but the last, and a partial tile as .p/<width>", () => {
    expect(encodeTileIndex(0)).toBe("000");
    expect(encodeTileIndex(67)).toBe("067");
    expect(encodeTileIndex(1234067)).toBe("x001/x234/067");
    expect(tilePathOf({ kind: "hashes", level: 0, index: 1234067, width: 256 })).toBe("tile/0/x001/x234/067");
    expect(tilePathOf({ kind: "hashes", level: 1, index: 1, width: 44 })).toBe("tile/1/001.p/44");
    expect(tilePathOf({ kind: "entries", level: 0, index: 0, width: 255 })).toBe("tile/entries/000.p/255");
    expect(parseTilePath("0/x001/x234/067")).toEqual({ kind: "hashes", level: 0, index: 1234067, width: 256 });
    expect(parseTilePath("entries/001.p/44")).toEqual({ kind: "entries", level: 0, index: 1, width: 44 });
    for (const bad of ["0/1234067", "0/x1/x234/067", "0/001/067", "0/000.p/256", "0/000.p/0", "0/x000/067"]) expect(() => parseTilePath(bad), bad).toThrow();
  });
});

describeOnDatabases(
  "tiles of a log wider than one tile",
  (t) => {
    let data: Buffer[] = [];

    beforeAll(async () => {
      useDatabase(t().db);
      // One append (the first row), rows written straight after it (as an import does), then one
      // append that builds the tree over all of them: 300 rows without 300 signatures.
      const did = (i: number) => `${i}`.padStart(64, "d");
      await appendNow(t().db, { event: "admit", did: did(0), at: new Date(Date.UTC(2026, 0, 1)), details: { name: "c0", bed_id: 0 } });
      const [first] = await t().db.select().from(residencyLog).orderBy(desc(residencyLog.seq)).limit(1);
      let prev = first!.hash;
      const rows = [];
      for (let seq = first!.seq + 1; seq < ROWS; seq++) {
        const at = new Date(Date.UTC(2026, 0, 1, 0, 0, seq));
        const hash = sha256Hex(canonicalJson({ seq, event: "admit", did: did(seq), at: at.toISOString(), prev_hash: prev }));
        rows.push({ seq, event: "admit", did: did(seq), at, details: {}, prevHash: prev, hash });
        prev = hash;
      }
      for (let i = 0; i < rows.length; i += 100)
        await t()
          .db.insert(residencyLog)
          .values(rows.slice(i, i + 100) as never);
      await appendNow(t().db, { event: "exit", did: did(0), at: new Date(Date.UTC(2026, 0, 2)), details: { bed_released: null } });
      data = (await t().db.select().from(residencyLog).orderBy(asc(residencyLog.seq))).map((r) => Buffer.from(leafDataOf(publishLogRow(r))));
      expect(data).toHaveLength(ROWS);
    }, 60_000);

    it("serves the full first tile of level 0: the 256 leaf hashes of rows 1 to 256", async () => {
      const full = await tile("0/000");
      expect(full.status).toBe(200);
      expect(full.bytes.length).toBe(256 * 32);
      expect(full.bytes.equals(Buffer.concat(data.slice(0, 256).map(leafHash)))).toBe(true);
    });

    it("serves older partial tiles (a prefix of a full tile) and the partial tile at the edge", async () => {
      for (const width of [1, 10, 255]) {
        const partial = await tile(`0/000.p/${width}`);
        expect(partial.status, `0/000.p/${width}`).toBe(200);
        expect(partial.bytes.equals(Buffer.concat(data.slice(0, width).map(leafHash))), `0/000.p/${width}`).toBe(true);
      }
      const edge = await tile("0/001.p/44");
      expect(edge.status).toBe(200);
      expect(edge.bytes.equals(Buffer.concat(data.slice(256, 300).map(leafHash)))).toBe(true);
      const older = await tile("0/001.p/20");
      expect(older.status).toBe(200);
      expect(older.bytes.equals(Buffer.concat(data.slice(256, 276).map(leafHash)))).toBe(true);
    });

    it("serves the level-1 tile: the root of the first 256 leaves", async () => {
      const level1 = await tile("1/000.p/1");
      expect(level1.status).toBe(200);
      expect(level1.bytes.equals(referenceRoot(data.slice(0, 256)))).toBe(true);
    });

    it("serves entry bundles: the full first one and the partial second one, each leaf behind its uint16 length", async () => {
      const bundle = (rows: Buffer[]) => Buffer.concat(rows.flatMap((d) => [Buffer.from([d.length >> 8, d.length & 255]), d]));
      const full = await tile("entries/000");
      expect(full.status).toBe(200);
      expect(full.bytes.equals(bundle(data.slice(0, 256)))).toBe(true);
      const partial = await tile("entries/001.p/44");
      expect(partial.status).toBe(200);
      expect(partial.bytes.equals(bundle(data.slice(256, 300)))).toBe(true);
    });

    it("answers 404 for tiles the tree has not reached", async () => {
      for (const path of ["0/001", "0/001.p/45", "0/002.p/1", "1/000", "1/000.p/2", "2/000.p/1", "entries/001", "entries/001.p/45"]) {
        expect((await tile(path)).status, path).toBe(404);
      }
    });
  },
  { ordered: "one log, built once in beforeAll; the tests only read it" },
);
