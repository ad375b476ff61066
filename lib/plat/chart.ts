/** The home chart's arithmetic: plain functions of the residency days, no drawing and no data access. */

export interface ChartDay {
  day: string;
  admits: number;
  returns: number;
  exits: number;
  exports: number;
  occupancy: number;
}

/** The fewest columns the chart draws: a young city's days stay readable, not one column crushed at the edge of thirty. */
export const MIN_CHART_DAYS = 7;

/**
 * The days worth drawing: from the day before the first on which anything happened or a bed was
 * held (so the chart starts from the empty city; older days are all zeros and say nothing), and
 * never fewer than `min` days, ending on the last.
 */
export function chartSpan<T extends ChartDay>(days: readonly T[], min = MIN_CHART_DAYS): T[] {
  const first = days.findIndex((d) => d.admits + d.returns + d.exits + d.exports + d.occupancy > 0);
  const latest = Math.max(0, days.length - min);
  const start = first < 0 ? latest : Math.min(Math.max(0, first - 1), latest);
  return days.slice(start);
}

/**
 * An honest scale for counts: a whole step of 1, 2 or 5 times a power of ten, about `lines` steps,
 * and a top at or above the largest value (at least 1). Every tick is a whole number.
 */
export function scale(max: number, lines = 3): { top: number; ticks: number[] } {
  const target = Math.max(1, max) / lines;
  const power = 10 ** Math.floor(Math.log10(target));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * power).find((s) => s >= target) ?? 10 * power);
  const top = Math.max(step, Math.ceil(Math.max(1, max) / step) * step);
  const ticks: number[] = [];
  for (let t = 0; t <= top; t += step) ticks.push(t);
  return { top, ticks };
}

/** "1 admit", "2 admits", "0 exports": a count with its noun in agreement. */
export function counted(n: number, noun: string): string {
  return `${n} ${n === 1 ? noun : `${noun}s`}`;
}

/** Which columns carry a date under them: every one up to a week, then about six spread evenly, the last always. */
export function labelledColumns(count: number): Set<number> {
  const every = count <= MIN_CHART_DAYS ? 1 : count <= 14 ? 2 : 7;
  const shown = new Set<number>();
  for (let i = count - 1; i >= 0; i -= every) shown.add(i);
  return shown;
}

/** The chart's summary sentence, for its description and for readers of the page. */
export function residencySummary(days: readonly ChartDay[]): string {
  const total = (key: "admits" | "returns" | "exits" | "exports") => days.reduce((sum, d) => sum + d[key], 0);
  const first = days[0]!;
  const last = days[days.length - 1]!;
  return (
    `From ${first.day} to ${last.day}: ${counted(total("admits"), "admit")}, ${counted(total("returns"), "return")}, ` +
    `${counted(total("exits"), "exit")} and ${counted(total("exports"), "export")}; beds held went from ${first.occupancy} to ${last.occupancy}.`
  );
}

/**
 * The beds line as a path of steps: each day's count held level across its whole column, and a
 * change drawn upright at the border between two columns. The log counts beds at each day's end, not
 * when within the day they changed, so a minute's admissions rise at once at their day's border
 * instead of sloping across a day they did not take. `slot` is a column's width, `y` a count's height.
 */
export function bedsSteps(days: readonly Pick<ChartDay, "occupancy">[], slot: number, y: (count: number) => number): string {
  const level = (count: number) => y(count).toFixed(2);
  return days
    .map((d, i) => {
      const start = i === 0 ? `M0,${level(d.occupancy)}` : `V${level(d.occupancy)}`;
      return `${start} H${(i + 1) * slot}`;
    })
    .join(" ");
}
