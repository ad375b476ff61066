import { type SQL, sql } from "drizzle-orm";

/*
 * A rate window counted per time bucket: a row keeps RATE_BUCKETS + 1 counts, newest first, the
 * newest being bucket number `bucket` (floor(epoch ms / bucket length)). A take counts every
 * attempt in the current bucket and the RATE_BUCKETS before it, which cover at least the window
 * (RATE_BUCKETS buckets are the window) and at most the window and one bucket more. So at most
 * `limit` attempts fall in any window's length (whatever their moments), and an attempt stops
 * counting between windowSeconds and windowSeconds + one bucket after it was made. The SQL
 * functions rate_window_shift and rate_window_count (migration 0043) do the same in SQL.
 */

/** Buckets per window: an attempt counts for at most a twelfth of the window longer than the window. */
export const RATE_BUCKETS = 12;

export interface Window {
  scope: string;
  subject: string;
  limit: number;
  windowSeconds: number;
  /** City-wide: counted over this many stripe rows (rate-stripes.ts cityWindow), none of which every caller locks. */
  stripes?: number;
  /**
   * City-wide only: the most of `limit` this taker may reach (a reserve: rate-stripes.ts withReach);
   * unset, the whole limit. Takers of every reach share the same stripes.
   */
  reach?: number;
  /**
   * City-wide only: this taker's reach past `floor` is released in steps (rate-stripes.ts withSteps):
   * in each step of the window (a bucket) it may take at most the step's portion of it.
   */
  steps?: { floor: number };
}

export interface Slot {
  allowed: boolean;
  /** Attempts counted in the window (for a city-wide window: in the stripe charged), this one included when allowed. */
  used: number;
  remaining: number;
  /** Seconds until the window has room again (when refused). */
  retryAfterSeconds: number;
}

/** A window's counts as a row holds them. */
export interface Bucketed {
  bucket: number;
  counts: number[];
}

/** A bucket's length (ms): the window cut in RATE_BUCKETS, rounded up so that they cover it. */
export function bucketMs(window: Pick<Window, "windowSeconds">): number {
  return Math.ceil((window.windowSeconds * 1000) / RATE_BUCKETS);
}

/** The number of the bucket `now` falls in. */
export function bucketOf(window: Pick<Window, "windowSeconds">, now: Date): number {
  return Math.floor(now.getTime() / bucketMs(window));
}

/** SQL: the counts of row `row` as they stand in the current bucket (rate_window_at, migration 0043). */
export function shiftedSql(window: Window, now: Date, row = "w"): SQL {
  const w = sql.raw(row);
  return sql`rate_window_at(${w}.counts, ${w}.bucket, ${w}.bucket_ms, ${bucketOf(window, now)}::bigint, ${bucketMs(window)}::bigint)`;
}

/** SQL: the attempts counted in an array of counts. */
export function countSql(counts: SQL): SQL {
  return sql`(SELECT coalesce(sum(c), 0) FROM unnest(${counts}) AS c)`;
}

/** SQL: the counts with one more attempt in the newest bucket. */
export function bumpedSql(counts: SQL): SQL {
  return sql`(ARRAY[(${counts})[1] + 1] || (${counts})[2:])`;
}

/** SQL: a window's first counts (one attempt, or none). */
export function freshCountsSql(taken: boolean): SQL {
  return sql.raw(`(ARRAY[${taken ? 1 : 0}] || array_fill(0, ARRAY[${RATE_BUCKETS}]))`);
}

/** The counts a row answered (node-postgres parses int[]; other drivers may answer its text). */
export function countsOf(value: unknown): number[] {
  if (Array.isArray(value)) return value.map(Number);
  if (typeof value === "string") return value.replace(/[{}]/g, "").split(",").filter(Boolean).map(Number);
  return [];
}

/** The attempts a window counts in bucket `at` (its buckets older than the window dropped). */
export function countAt(state: Bucketed, at: number): number {
  const d = Math.max(0, at - state.bucket);
  return state.counts.slice(0, Math.max(0, state.counts.length - d)).reduce((a, b) => a + b, 0);
}

/** The attempts a window counts now. */
export function usedOf(state: Bucketed, window: Window, now: Date): number {
  return countAt(state, bucketOf(window, now));
}

/** When (epoch ms) a window counts fewer than `limit` again: the start of the first bucket whose shift drops enough. */
export function freesAt(state: Bucketed, limit: number, window: Window, now: Date): number {
  const cur = bucketOf(window, now);
  if (limit <= 0) return now.getTime() + window.windowSeconds * 1000;
  for (let at = Math.max(cur, state.bucket); at <= state.bucket + RATE_BUCKETS + 1; at++) {
    if (countAt(state, at) < limit) return at === cur ? now.getTime() : at * bucketMs(window);
  }
  return (state.bucket + RATE_BUCKETS + 1) * bucketMs(window);
}

/** Whole seconds (at least one) until `at` (epoch ms). */
export function secondsUntil(at: number, now: Date): number {
  return Math.max(1, Math.ceil((at - now.getTime()) / 1000));
}
