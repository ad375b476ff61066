import type { ResidencyDay } from "@/lib/city/logs/residency-log";
import { bedsSteps, chartSpan, labelledColumns, residencySummary, scale } from "@/lib/plat/chart";
import { look } from "@/lib/plat/nav";

const SERIES = [
  { key: "admits", label: "admits", fill: "fill-emerald-600 dark:fill-emerald-400", swatch: "bg-emerald-600 dark:bg-emerald-400" },
  { key: "returns", label: "returns", fill: "fill-sky-600 dark:fill-sky-400", swatch: "bg-sky-600 dark:bg-sky-400" },
  { key: "exits", label: "exits", fill: "fill-amber-600 dark:fill-amber-400", swatch: "bg-amber-600 dark:bg-amber-400" },
  { key: "exports", label: "exports", fill: "fill-stone-500 dark:fill-stone-400", swatch: "bg-stone-500 dark:bg-stone-400" },
] as const;

/** Units of the drawings' own boxes: a column is SLOT wide, a panel 100 high (the line's width may overflow its edges). */
const SLOT = 10;
const y = (value: number, top: number) => 100 - (value / top) * 100;

/**
 * A panel: its scale's numbers in HTML on the left (so they keep their size on a phone; text in a
 * scaled SVG shrank to 6 px), and a drawing stretched to the width beside them.
 */
function Panel({
  title,
  ticks,
  top,
  height,
  tone,
  children,
  columns,
  later,
}: {
  title: React.ReactNode;
  ticks: number[];
  top: number;
  height: string;
  tone: string;
  children: React.ReactNode;
  columns: number;
  later?: boolean;
}) {
  return (
    <>
      <p className={`col-span-2 text-sm font-medium ${later ? "mt-4" : ""}`}>{title}</p>
      {/* The ticks are evenly spaced from 0 to the top, so spacing them evenly places them (the page's policy allows no inline style). */}
      <div className={`flex ${height} flex-col-reverse justify-between text-right text-xs leading-none tabular-nums ${tone}`} aria-hidden="true">
        {ticks.map((t) => (
          <span key={t} className="flex h-0 items-center justify-end">
            {t}
          </span>
        ))}
      </div>
      <svg viewBox={`0 0 ${columns * SLOT} 100`} preserveAspectRatio="none" className={`${height} w-full overflow-visible`} aria-hidden="true" data-chart-panel>
        {ticks.map((t) => (
          <line
            key={t}
            x1={0}
            x2={columns * SLOT}
            y1={y(t, top)}
            y2={y(t, top)}
            vectorEffect="non-scaling-stroke"
            className="stroke-stone-200 dark:stroke-stone-700"
          />
        ))}
        {children}
      </svg>
    </>
  );
}

/**
 * The city over time, server-drawn: beds held at each day's end (a line) and the day's admits,
 * returns, exits and exports (bars), in two panels, each on its own labelled scale (one panel
 * over another, never two scales over one drawing). Beds are drawn as steps, level through each day
 * and changing at its border: the log says how many at each day's end, not when within it. A young city is drawn from the day before its
 * first event, at least a week, rather than one used column of thirty. Plain SVG needs no library.
 */
export function ResidencyChart({ days: all }: { days: ResidencyDay[] }) {
  const days = chartSpan(all);
  const n = days.length;
  const events = scale(Math.max(...days.flatMap((d) => SERIES.map((s) => d[s.key]))));
  const beds = scale(Math.max(...days.map((d) => d.occupancy)));
  const bar = (SLOT - 3) / SERIES.length;
  const line = bedsSteps(days, SLOT, (count) => y(count, beds.top));
  const summary = residencySummary(days);
  const dated = labelledColumns(n);

  return (
    <figure className="mt-4">
      <p id="chart-title" className="sr-only">{`The city over the last ${n} days`}</p>
      <div
        role="img"
        aria-labelledby="chart-title"
        aria-describedby="chart-desc"
        data-chart="residency"
        className={`${look.card} grid grid-cols-[auto_minmax(0,1fr)] gap-x-2 gap-y-1 p-3 sm:p-4`}
      >
        <Panel
          title={
            <>
              <span className="mr-1.5 inline-block h-0.5 w-4 bg-violet-700 align-middle dark:bg-violet-300" aria-hidden="true" />
              Beds held at each day&apos;s end
            </>
          }
          ticks={beds.ticks}
          top={beds.top}
          height="h-24"
          tone="text-violet-800 dark:text-violet-300"
          columns={n}
        >
          <path
            d={line}
            fill="none"
            strokeWidth={2.5}
            vectorEffect="non-scaling-stroke"
            strokeLinejoin="miter"
            className="stroke-violet-700 dark:stroke-violet-300"
            data-beds-line
          />
        </Panel>
        <Panel title="Events per day" ticks={events.ticks} top={events.top} height="h-32" tone={look.muted} columns={n} later>
          {days.map((d, i) =>
            SERIES.map((s, k) =>
              d[s.key] > 0 ? (
                <rect
                  key={`${d.day}-${s.key}`}
                  x={i * SLOT + 1.5 + k * bar}
                  y={y(d[s.key], events.top)}
                  width={bar}
                  height={100 - y(d[s.key], events.top)}
                  className={s.fill}
                />
              ) : null,
            ),
          )}
        </Panel>
        <span aria-hidden="true" />
        <div className={`mt-1 flex h-5 text-xs tabular-nums ${look.muted}`} aria-hidden="true">
          {days.map((d, i) => (
            <span key={d.day} className="relative min-w-0 flex-1">
              {dated.has(i) ? <span className="absolute left-1/2 -translate-x-1/2 whitespace-nowrap">{d.day.slice(5)}</span> : null}
            </span>
          ))}
        </div>
      </div>
      <figcaption className={`mt-2 flex flex-wrap gap-x-4 gap-y-1 text-sm ${look.muted}`}>
        {SERIES.map((s) => (
          <span key={s.key} className="inline-flex items-center gap-1.5">
            <span className={`inline-block size-3 rounded-sm ${s.swatch}`} aria-hidden="true" />
            {s.label}
          </span>
        ))}
        <span>one UTC day per column (month-day)</span>
      </figcaption>
      <p id="chart-desc" className={`mt-2 text-sm ${look.muted}`}>
        {summary}
      </p>
      <details className="mt-2 text-sm">
        <summary className="cursor-pointer">The numbers, day by day</summary>
        <table className="mt-2 w-full text-left text-xs tabular-nums">
          <caption className="sr-only">Residency log events per UTC day and beds held at the end of each day</caption>
          <thead>
            <tr>
              {["day", "admits", "returns", "exits", "exports", "beds"].map((h) => (
                <th key={h} scope="col" className="py-1 pr-2 font-medium">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {days.map((d) => (
              <tr key={d.day} className="border-t border-stone-200 dark:border-stone-700">
                <th scope="row" className="py-1 pr-2 font-normal">
                  {d.day}
                </th>
                <td className="pr-2">{d.admits}</td>
                <td className="pr-2">{d.returns}</td>
                <td className="pr-2">{d.exits}</td>
                <td className="pr-2">{d.exports}</td>
                <td>{d.occupancy}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
