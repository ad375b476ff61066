import { describe, expect, it } from "vitest";
import { CityError } from "@/lib/errors";
import { encodeTileIndex, parseTilePath, TILE_WIDTH, tilePathOf } from "@/lib/tlog/tiles";

/** C2SP tlog-tiles paths (lib/tlog/tiles.ts) against the spec's spellings, written as literals. */
describe("tile paths", () => {
  it("is 256 hashes wide", () => {
    expect(TILE_WIDTH).toBe(256);
  });

  it("writes an index in three-digit groups, all but the last prefixed with x", () => {
    expect(encodeTileIndex(0)).toBe("000");
    expect(encodeTileIndex(7)).toBe("007");
    expect(encodeTileIndex(999)).toBe("999");
    expect(encodeTileIndex(1000)).toBe("x001/000");
    expect(encodeTileIndex(1234067)).toBe("x001/x234/067");
    expect(encodeTileIndex(1000000)).toBe("x001/x000/000");
  });

  it("writes full and partial tile paths", () => {
    expect(tilePathOf({ kind: "hashes", level: 0, index: 1234067, width: 256 })).toBe("tile/0/x001/x234/067");
    expect(tilePathOf({ kind: "hashes", level: 2, index: 5, width: 17 })).toBe("tile/2/005.p/17");
    expect(tilePathOf({ kind: "entries", level: 0, index: 1000, width: 255 })).toBe("tile/entries/x001/000.p/255");
    expect(tilePathOf({ kind: "entries", level: 3, index: 1, width: 256 })).toBe("tile/entries/001");
  });

  it("parses the canonical spellings", () => {
    expect(parseTilePath("0/x001/x234/067")).toEqual({ kind: "hashes", level: 0, index: 1234067, width: 256 });
    expect(parseTilePath("6/000")).toEqual({ kind: "hashes", level: 6, index: 0, width: 256 });
    expect(parseTilePath("1/005.p/1")).toEqual({ kind: "hashes", level: 1, index: 5, width: 1 });
    expect(parseTilePath("entries/x001/000.p/255")).toEqual({ kind: "entries", level: 0, index: 1000, width: 255 });
    expect(parseTilePath("entries/999")).toEqual({ kind: "entries", level: 0, index: 999, width: 256 });
    expect(parseTilePath("0/x009/x007/x199/x254/x740/991")).toEqual({ kind: "hashes", level: 0, index: Number.MAX_SAFE_INTEGER, width: 256 });
  });

  it.each([
    "",
    "0",
    "0/",
    "7/000",
    "10/000",
    "a/000",
    "-1/000",
    "/000",
    "0/00",
    "0/0000",
    "0/x000",
    "0/1/000",
    "0/x1/000",
    "0/001/000",
    "0/x001/00",
    "0/x000/001",
    "0/00a",
    "0/000.p/0",
    "0/000.p/256",
    "0/000.p/010",
    "0/000.p/1000",
    "0/000.p/12a",
    "0/000.p/",
    "0/000.p",
    "0/000.q/5",
    "0/000/5",
    "0/000.p/5/6",
    "0/x999/x999/x999/x999/x999/x999/999",
    "0/x009/x007/x199/x254/x740/992",
    "entries/0000",
    "entries/000.p/256",
    "0 /000",
  ])("refuses %j as not_found", (path) => {
    let thrown: unknown;
    try {
      parseTilePath(path);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(CityError);
    expect((thrown as CityError).code).toBe("not_found");
    expect((thrown as CityError).message).toMatch(
      /^No such tile: a tile is tile\/<L>\/<N>\[\.p\/<W>\] or tile\/entries\/<N>\[\.p\/<W>\] \(C2SP tlog-tiles\), N in three-digit groups such as x001\/234\.$/,
    );
  });
});
