import type { ResidencyDay } from "@/lib/city/residency-history";
import { look } from "@/lib/plat/nav";

const W = 640;
const H = 260;
const PAD = { top: 16, right: 44, bottom: 28, left: 36 };
const PLOT_W = W - PAD.left - PAD.right;
const PLOT_H = H - PAD.top - PAD.bottom;

const SERIES = [
  { key: "admits", label: "admits", fill: "fill-emerald-600 dark:fill-emerald-400", swatch: "bg-emerald-600 dark:bg-emerald-400" },
  { key: "returns", label: "returns", fill: "fill-sky-600 dark:fill-sky-400", swatch: "bg-sky-600 dark:bg-sky-400" },
  { key: "exits", label: "exits", fill: "fill-amber-600 dark:fill-amber-400", swatch: "bg-amber-600 dark:bg-amber-400" },
  { key: "exports", label: "exports", fill: "fill-stone-500 dark:fill-stone-400", swatch: "bg-stone-500 dark:bg-stone-400" },
] as const;

/** 0, half and the top of a scale whose top is at least 1 (halves only when they are whole). */
function ticks(top: number): number[] {
  return top % 2 === 0 ? [0, top / 2, top] : [0, top];
}

/**
 * The city over time as a server-drawn SVG: admits, returns, exits and exports per day as bars (left
 * scale) and beds held at each day's end as a line (right scale). Plain SVG needs no library.
 */
export function ResidencyChart({ days }: { days: ResidencyDay[] }) {
  const eventTop = Math.max(1, ...days.flatMap((d) => SERIES.map((s) => d[s.key])));
  const bedTop = Math.max(1, ...days.map((d) => d.occupancy));
  const slot = PLOT_W / days.length;
  const bar = Math.max(1, (slot - 2) / SERIES.length);
  const y = (value: number, top: number) => PAD.top + PLOT_H - (value / top) * PLOT_H;
  const x = (i: number) => PAD.left + i * slot;
  const line = days.map((d, i) => `${i === 0 ? "M" : "L"}${(x(i) + slot / 2).toFixed(1)},${y(d.occupancy, bedTop).toFixed(1)}`).join(" ");
  const total = (key: "admits" | "returns" | "exits" | "exports") => days.reduce((sum, d) => sum + d[key], 0);
  const first = days[0]!;
  const last = days[days.length - 1]!;
  const summary = `From ${first.day} to ${last.day}: ${total("admits")} admits, ${total("returns")} returns, ${total("exits")} exits and ${total("exports")} exports; beds held went from ${first.occupancy} to ${last.occupancy}.`;

  return (
    <figure className="mt-4">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="chart-title chart-desc" className={`h-auto w-full ${look.card}`} data-chart="residency">
        {/* One string: React 19 renders a <title> of several children empty, and hydration then fails. */}
        <title id="chart-title">{`The city over the last ${days.length} days`}</title>
        <desc id="chart-desc">{summary}</desc>
        <g className="fill-stone-600 text-[13px] dark:fill-stone-300" aria-hidden="true">
          {ticks(eventTop).map((t) => (
            <g key={`e${t}`}>
              <line x1={PAD.left} x2={W - PAD.right} y1={y(t, eventTop)} y2={y(t, eventTop)} className="stroke-stone-200 dark:stroke-stone-700" />
              <text x={PAD.left - 6} y={y(t, eventTop) + 4} textAnchor="end">
                {t}
              </text>
            </g>
          ))}
          {ticks(bedTop).map((t) => (
            <text key={`b${t}`} x={W - PAD.right + 6} y={y(t, bedTop) + 4} className="fill-violet-700 dark:fill-violet-300">
              {t}
            </text>
          ))}
          {days.map((d, i) =>
            i % 7 === (days.length - 1) % 7 ? (
              <text key={d.day} x={x(i) + slot / 2} y={H - 8} textAnchor="middle">
                {d.day.slice(5)}
              </text>
            ) : null,
          )}
        </g>
        <g aria-hidden="true">
          {days.map((d, i) =>
            SERIES.map((s, k) =>
              d[s.key] > 0 ? (
                <rect key={`${d.day}-${s.key}`} x={x(i) + 1 + k * bar} y={y(d[s.key], eventTop)} width={bar} height={PLOT_H + PAD.top - y(d[s.key], eventTop)} className={s.fill} />
              ) : null,
            ),
          )}
          <path d={line} fill="none" strokeWidth={2.5} className="stroke-violet-700 dark:stroke-violet-300" />
        </g>
      </svg>
      <figcaption className={`mt-2 flex flex-wrap gap-x-4 gap-y-1 text-sm ${look.muted}`}>
        {SERIES.map((s) => (
          <span key={s.key} className="inline-flex items-center gap-1.5">
            <span className={`inline-block size-3 rounded-sm ${s.swatch}`} aria-hidden="true" />
            {s.label} per day (left scale)
          </span>
        ))}
        <span className="inline-flex items-center gap-1.5">
          <span className="inline-block h-0.5 w-4 bg-violet-700 dark:bg-violet-300" aria-hidden="true" />
          beds held at day&apos;s end (right scale)
        </span>
      </figcaption>
      <p className={`mt-2 text-sm ${look.muted}`}>{summary}</p>
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
