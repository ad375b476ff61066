import { describe, expect, it } from "vitest";
import { bedsSteps, chartSpan, counted, labelledColumns, residencySummary, scale } from "@/lib/plat/chart";

const day = (i: number, fill: Partial<{ admits: number; returns: number; exits: number; exports: number; occupancy: number }> = {}) => ({
  day: `2026-11-${String(i + 1).padStart(2, "0")}`,
  admits: 0,
  returns: 0,
  exits: 0,
  exports: 0,
  occupancy: 0,
  ...fill,
});

describe("the home chart's arithmetic", () => {
  it("draws a young city from the day before its first event, at least a week, not thirty columns with one used", () => {
    const days = Array.from({ length: 30 }, (_, i) => day(i, i === 29 ? { admits: 3, occupancy: 3 } : {}));
    const span = chartSpan(days);
    expect(span).toHaveLength(7);
    expect(span[span.length - 1]!.day).toBe("2026-11-30");
    // A city ten days old: the day before its first admit, then its ten days.
    const older = Array.from({ length: 30 }, (_, i) => day(i, i >= 20 ? { admits: 1, occupancy: i - 19 } : {}));
    expect(chartSpan(older).map((d) => d.day)[0]).toBe("2026-11-20");
    expect(chartSpan(older)[0]!.occupancy).toBe(0);
    // A city older than the window keeps every day; an empty one shows a week of zeros.
    expect(chartSpan(Array.from({ length: 30 }, (_, i) => day(i, { occupancy: 2 })))).toHaveLength(30);
    expect(chartSpan(Array.from({ length: 30 }, (_, i) => day(i)))).toHaveLength(7);
  });

  it("scales to whole steps of 1, 2 or 5 with a top at or above the largest value", () => {
    expect(scale(0)).toEqual({ top: 1, ticks: [0, 1] });
    expect(scale(1)).toEqual({ top: 1, ticks: [0, 1] });
    expect(scale(7)).toEqual({ top: 10, ticks: [0, 5, 10] });
    expect(scale(11)).toEqual({ top: 15, ticks: [0, 5, 10, 15] });
    expect(scale(10)).toEqual({ top: 10, ticks: [0, 5, 10] });
    expect(scale(1234).ticks.every((t) => Number.isInteger(t))).toBe(true);
    for (const max of [1, 2, 3, 7, 11, 99, 101, 5000]) expect(scale(max).top).toBeGreaterThanOrEqual(max);
  });

  it("agrees a count with its noun: 1 return, 2 returns, 0 exports", () => {
    expect(counted(1, "return")).toBe("1 return");
    expect(counted(2, "return")).toBe("2 returns");
    expect(counted(0, "export")).toBe("0 exports");
    expect(residencySummary([day(0), day(1, { admits: 4, returns: 1, exits: 2, exports: 1, occupancy: 2 })])).toBe(
      "From 2026-11-01 to 2026-11-02: 4 admits, 1 return, 2 exits and 1 export; beds held went from 0 to 2.",
    );
  });

  it("labels every column of a week, and always the last", () => {
    expect([...labelledColumns(7)].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(labelledColumns(30).has(29)).toBe(true);
    expect(labelledColumns(30).size).toBeLessThanOrEqual(6);
  });
});

describe("the beds line's time axis", () => {
  const y = (count: number) => 100 - count * 10;
  it("holds each day's count level across its column and changes it upright at the border: a minute's admissions never slope across a day", () => {
    const days = [day(0), day(1, { admits: 3, occupancy: 3 }), day(2, { occupancy: 3 })];
    const path = bedsSteps(days, 10, y);
    expect(path).toBe("M0,100.00 H10 V70.00 H20 V70.00 H30");
    // Only level and upright moves after the start: no segment spans two days with a slope.
    expect(path.replace(/^M[\d.]+,[\d.]+/, "")).not.toMatch(/[LCQSTA]/);
    // The line covers the whole span, from the first column's left edge to the last one's right edge.
    expect(path.startsWith("M0,")).toBe(true);
    expect(path.endsWith(`H${days.length * 10}`)).toBe(true);
  });
});
