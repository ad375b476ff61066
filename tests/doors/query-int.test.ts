import { describe, expect, it } from "vitest";
import { CANONICAL_INT, queryInt } from "@/lib/doors/declarations/query-int";

/*
 * Issue 29, item 11: an integer in a query is taken only in its canonical decimal form. The table
 * is what z.coerce.number() took before (every refused row but the last three) and what stays.
 */
const REFUSED: unknown[] = [
  "0x10",
  "0X10",
  "0b11",
  "0o7",
  "1e3",
  "1E3",
  "1.0",
  "5.",
  ".5",
  "-1",
  "+5",
  " 5",
  "5 ",
  "  5",
  "\t5",
  "5\n",
  "05",
  "007",
  "",
  "1_000",
  "1,000",
  "٣",
  "５",
  "Infinity",
  "NaN",
  "9007199254740992",
  "99999999999999999999",
  "1".repeat(400),
  ["1", "2"],
  null,
  true,
  1.5,
  -1,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  9007199254740992,
];
const TAKEN: Array<[unknown, number]> = [
  ["0", 0],
  ["1", 1],
  ["10", 10],
  ["1000", 1000],
  ["9007199254740991", Number.MAX_SAFE_INTEGER],
  [0, 0],
  [42, 42],
  [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
];

describe("canonical decimal integers in queries (lib/doors/declarations/query-int.ts)", () => {
  const size = queryInt(0);
  it.each(REFUSED.map((v) => [JSON.stringify(v) ?? String(v), v]))("refuses %s", (_label, value) => {
    const parsed = size.safeParse(value);
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.message).toMatch(/canonical decimal form/);
  });
  it.each(TAKEN.map(([v, n]) => [JSON.stringify(v), v, n]))("takes %s", (_label, value, expected) => {
    expect(size.parse(value)).toBe(expected);
  });
  it("holds the lower bound (seq starts at 1) and the pattern is the published one", () => {
    expect(queryInt(1).safeParse("0").success).toBe(false);
    expect(queryInt(1).safeParse(0).success).toBe(false);
    expect(queryInt(1).parse("1")).toBe(1);
    expect(CANONICAL_INT.source).toBe("^(0|[1-9][0-9]*)$");
  });
});
