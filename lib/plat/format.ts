/** Presentation helpers of the plat (the human pages): plain functions, no data access. */

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 31_536_000],
  ["month", 2_592_000],
  ["day", 86_400],
  ["hour", 3_600],
  ["minute", 60],
  ["second", 1],
];

const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

/** "3 hours ago", "yesterday", "now": how long before `now` a moment was. */
export function timeAgo(iso: string, now: Date): string {
  const seconds = Math.round((Date.parse(iso) - now.getTime()) / 1000);
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === "second") return relative.format(Math.trunc(seconds / size), unit);
  }
  return iso;
}

/** An ISO timestamp as people read it, to the second, still in UTC. */
export function exactTime(iso: string): string {
  return iso.replace("T", " ").replace(/\.\d{3}Z$/, " UTC");
}

/** The public facts of an identity log row, as the row says them: every field but the chain's own and the public key (its thumbprint is there). */
export function keyEventFacts(row: Record<string, unknown>): string {
  const skip = new Set(["seq", "event", "did", "at", "hash", "prev_hash", "public_key"]);
  return Object.entries(row)
    .filter(([k, v]) => !skip.has(k) && v !== null)
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(" · ");
}

/** The one value of a query parameter (the first when repeated). */
export function param(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A page size from `?limit=`: a whole number within 1..max, else the default. */
export function pageSize(value: string | string[] | undefined, fallback: number, max: number): number {
  const n = Number(param(value));
  return Number.isInteger(n) && n >= 1 && n <= max ? n : fallback;
}

/** A plat link with its query; empty values are left out. */
export function hrefWith(path: string, query: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== "") search.set(key, String(value));
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

export type SearchParams = Promise<Record<string, string | string[] | undefined>>;
