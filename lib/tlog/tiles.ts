import { CityError } from "@/lib/errors";

/** A C2SP tlog-tiles path below `tile/`: a hash tile (level L) or an entry bundle, index N, width W. */
export interface TilePath {
  kind: "hashes" | "entries";
  level: number;
  index: number;
  width: number;
}

export const TILE_WIDTH = 256;
// 2^53 leaves is beyond any city; levels 0..6 of tiles cover it.
const MAX_TILE_LEVEL = 6;

/** N as tlog-tiles writes it: three-digit groups, all but the last prefixed with `x` (1234067 → x001/x234/067). */
export function encodeTileIndex(index: number): string {
  const groups: string[] = [];
  let n = index;
  do {
    groups.unshift(String(n % 1000).padStart(3, "0"));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join("/");
}

export function tilePathOf(tile: TilePath): string {
  const base = `tile/${tile.kind === "entries" ? "entries" : tile.level}/${encodeTileIndex(tile.index)}`;
  return tile.width === TILE_WIDTH ? base : `${base}.p/${tile.width}`;
}

/** Parses `<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]`, accepting only the one canonical spelling. */
export function parseTilePath(path: string): TilePath {
  const bad = () =>
    new CityError(
      "not_found",
      "No such tile: a tile is tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>] (C2SP tlog-tiles), N in three-digit groups such as x001/234.",
    );
  const segments = path.split("/");
  const head = segments.shift();
  let width = TILE_WIDTH;
  const partial = segments.length >= 2 && segments[segments.length - 2]!.endsWith(".p");
  if (partial) {
    const w = segments.pop()!;
    if (!/^[1-9][0-9]{0,2}$/.test(w) || Number(w) >= TILE_WIDTH) throw bad();
    width = Number(w);
    segments[segments.length - 1] = segments[segments.length - 1]!.slice(0, -2);
  }
  if (segments.length === 0 || !segments.every((s, i) => (i < segments.length - 1 ? /^x[0-9]{3}$/ : /^[0-9]{3}$/).test(s))) throw bad();
  const index = Number(segments.map((s) => s.replace("x", "")).join(""));
  if (!Number.isSafeInteger(index) || encodeTileIndex(index) !== segments.join("/")) throw bad();
  if (head === "entries") return { kind: "entries", level: 0, index, width };
  if (!head || !/^[0-9]$/.test(head) || Number(head) > MAX_TILE_LEVEL) throw bad();
  return { kind: "hashes", level: Number(head), index, width };
}
