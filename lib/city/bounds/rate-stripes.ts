import { type SQL, sql } from "drizzle-orm";
import {
  type Bucketed,
  bucketMs,
  bucketOf,
  bumpedSql,
  countSql,
  countsOf,
  freesAt,
  freshCountsSql,
  secondsUntil,
  shiftedSql,
  type Slot,
  usedOf,
  type Window,
} from "./rate-buckets";

/*
 * A city-wide window without a row for the whole city: its limit is cut in stripes (subjects
 * city/0, city/1, ...; stripe s holds limit / N, the first limit % N one more), each a bucketed
 * window of its own (rate-buckets.ts). A taker charges the stripe with the most room that no other
 * transaction holds (FOR UPDATE SKIP LOCKED), so parallel takers charge distinct rows and none
 * waits while a stripe with room is free; only when every stripe with room is held does it wait
 * for one (see stripedCtes). So:
 * - never more than `limit` in any window's length: each stripe lets at most its share through;
 * - a refusal means every stripe counted its whole share (the city counted `limit`), except in one
 *   case: the free stripe a take locked was filled, twice in a row, by takes that committed while
 *   its statement ran (then it answers Retry-After 1, and the next take finds the room); and a
 *   first take racing to store a window's stripes (the migration stores those of the city's own).
 * Stripes never expire (the sweep keeps them): at most RATE_STRIPES rows per city-wide window.
 * A taker may be given a lower reach (withReach: a reserve): it then charges a stripe only below
 * that stripe's share of the reach, on the same rows, so such takers together never pass the reach.
 */

/** Stripes of a city-wide window at most (fewer when its limit is smaller: every stripe holds a slot). */
export const RATE_STRIPES = 32;

/** A city-wide window: counted over min(RATE_STRIPES, limit) stripes. */
export function cityWindow(scope: string, limit: number, windowSeconds: number): Window {
  return { scope, subject: "city", limit, windowSeconds, stripes: Math.max(1, Math.min(RATE_STRIPES, limit)) };
}

/**
 * A city-wide window as a taker that may reach only `reach` of its limit sees it: the same stripes
 * (so every taker counts against one limit), each letting this taker through only while it holds
 * less than its share of `reach`. A reserve: takers of a lower reach together never pass `reach`,
 * so `limit - reach` stays for the others whatever they do (never more than `limit` in all).
 */
export function withReach(window: Window, reach: number): Window {
  return { ...window, reach: Math.max(0, Math.min(window.limit, Math.floor(reach))) };
}

/** What a taker of this window may reach of its limit (its reach, else the whole limit). */
export function reachOf(window: Window): number {
  return window.reach ?? window.limit;
}

/**
 * Stripe `s`'s share of what this taker may reach. The reach is cut as the limit is (the first
 * reach % N stripes one more), so no stripe's share of a reach is above its share of the limit.
 */
export function stripeLimit(window: Window, s: number): number {
  const n = window.stripes ?? 1;
  const total = reachOf(window);
  return Math.floor(total / n) + (s < total % n ? 1 : 0);
}

function stripeSubject(window: Window, s: number): string {
  return `${window.subject}/${s}`;
}

/** SQL VALUES (subject, lim, ord) of every stripe, ord counted from stripe `home`. */
function stripesValues(window: Window, home: number): SQL {
  const n = window.stripes ?? 1;
  const rows = Array.from({ length: n }, (_, s) => sql`(${stripeSubject(window, s)}::text, ${stripeLimit(window, s)}::int, ${(s - home + n) % n}::int)`);
  return sql`(SELECT * FROM (VALUES ${sql.join(rows, sql`, `)}) AS v(subject, lim, ord))`;
}

/** SQL: the stored stripes (`r`) as JSON, what a refusal's Retry-After is computed from. */
function stripesJson(window: Window, stripes: SQL): SQL {
  return sql`(SELECT json_agg(json_build_object('subject', r.subject, 'bucket', r.bucket, 'bucket_ms', r.bucket_ms, 'counts', r.counts))
    FROM rate_windows r JOIN ${stripes} s ON s.subject = r.subject WHERE r.scope = ${window.scope})`;
}

/**
 * SQL (a SELECT of one row): whether the window has room, read from the statement's snapshot (a
 * stripe with room, or one not stored yet), and its stripes as JSON (see stripesRetryAfter).
 */
export function stripesRoomSql(window: Window, now: Date): SQL {
  const stripes = stripesValues(window, 0);
  const count = countSql(shiftedSql(window, now, "r"));
  return sql`SELECT count(*) FILTER (WHERE ${count} < s.lim) > 0 OR count(*) < ${window.stripes ?? 1}::int AS room, ${stripesJson(window, stripes)} AS stripes
    FROM rate_windows r JOIN ${stripes} s ON s.subject = r.subject WHERE r.scope = ${window.scope}`;
}

/**
 * The CTEs that take a city-wide window as CTE `name` (columns allowed, subject, bucket, counts,
 * stripes: those of takeWindowSql, and the stripes as JSON when refused), only when `source` (a
 * FROM ... WHERE clause on the statement's other CTEs) has a row. `room`: the stripes with room as
 * the statement's snapshot saw them (no lock). `pick` locks the one with the most room that no
 * transaction holds (SKIP LOCKED; ties broken from a random stripe), `took` charges it when its
 * latest version still has room; if a take committed meanwhile filled it, `again` and `retook` do
 * the same once more with another. Only when every stripe with room is held (so this statement
 * holds none) does `wait` lock, in the order of their subjects, the first whose latest version has
 * room, waiting for each holder in turn: every statement that waits takes its stripe locks in one
 * order and holds no other, so no two wait for each other. When no stored stripe has room and
 * some are not stored, `made` stores them all (in order; one holds this attempt).
 */
export function stripedCtes(name: string, window: Window, now: Date, source: SQL = sql``): SQL {
  const n = (suffix: string) => sql.raw(`${name}_${suffix}`);
  const home = Math.floor(Math.random() * (window.stripes ?? 1));
  const go = sql`EXISTS (SELECT 1 ${source})`;
  const shifted = shiftedSql(window, now, "w");
  const count = countSql(shifted);
  const cur = sql`${bucketOf(window, now)}::bigint`;
  const b = sql`${bucketMs(window)}::bigint`;
  const scope = sql`${window.scope}::text`;
  const columns = sql`w.allowed, w.subject, w.bucket, w.counts`;
  const charge = (locked: SQL) =>
    sql`UPDATE rate_windows w SET counts = ${bumpedSql(shifted)}, bucket = greatest(w.bucket, ${cur}), bucket_ms = ${b}, allowed = true
      FROM ${locked} c WHERE w.scope = ${scope} AND w.subject = c.subject AND ${count} < c.lim RETURNING ${columns}`;
  const free = (when: SQL) =>
    sql`SELECT w.subject, r.lim FROM rate_windows w JOIN ${n("room")} r ON r.subject = w.subject WHERE w.scope = ${scope} AND ${when}
      ORDER BY r.free DESC, r.ord LIMIT 1 FOR UPDATE OF w SKIP LOCKED`;
  // The stripe a first take stores holding this attempt: one with a share of this taker's reach.
  const first = sql`(SELECT subject FROM ${n("new")} WHERE lim > 0 ORDER BY ord LIMIT 1)`;
  return sql`
    ${n("stripes")} AS ${stripesValues(window, home)},
    ${n("room")} AS (
      SELECT w.subject, s.lim, s.ord, s.lim - ${count} AS free FROM rate_windows w JOIN ${n("stripes")} s ON s.subject = w.subject
      WHERE w.scope = ${scope} AND ${go} AND ${count} < s.lim),
    ${n("pick")} AS (${free(sql`true`)}),
    ${n("took")} AS (${charge(n("pick"))}),
    ${n("again")} AS (${free(sql`w.subject <> (SELECT subject FROM ${n("pick")}) AND NOT EXISTS (SELECT 1 FROM ${n("took")})`)}),
    ${n("retook")} AS (${charge(n("again"))}),
    ${n("wait")} AS (
      SELECT w.subject, s.lim FROM rate_windows w JOIN ${n("stripes")} s ON s.subject = w.subject
      WHERE w.scope = ${scope} AND ${go} AND NOT EXISTS (SELECT 1 FROM ${n("pick")}) AND ${count} < s.lim
      ORDER BY w.subject LIMIT 1 FOR UPDATE OF w),
    ${n("waited")} AS (${charge(n("wait"))}),
    ${n("new")} AS (
      SELECT s.subject, s.ord, s.lim FROM ${n("stripes")} s
      WHERE ${go} AND NOT EXISTS (SELECT 1 FROM ${n("room")})
        AND NOT EXISTS (SELECT 1 FROM rate_windows r WHERE r.scope = ${scope} AND r.subject = s.subject)),
    ${n("made")} AS (
      INSERT INTO rate_windows (scope, subject, bucket, bucket_ms, counts, expires_at, allowed)
      SELECT ${scope}, subject, ${cur}, ${b}, CASE WHEN subject = ${first} THEN ${freshCountsSql(true)} ELSE ${freshCountsSql(false)} END,
        'infinity', coalesce(subject = ${first}, false) FROM ${n("new")} ORDER BY subject
      ON CONFLICT (scope, subject) DO NOTHING RETURNING allowed, subject, bucket, counts),
    ${sql.raw(name)} AS (
      SELECT coalesce(t.allowed, false) AS allowed, t.subject, t.bucket, t.counts,
        CASE WHEN t.allowed IS NOT TRUE THEN ${stripesJson(window, n("stripes"))} END AS stripes
      FROM (SELECT 1) one LEFT JOIN (
        SELECT * FROM ${n("took")} UNION ALL SELECT * FROM ${n("retook")} UNION ALL SELECT * FROM ${n("waited")}
        UNION ALL SELECT * FROM ${n("made")} WHERE allowed) t ON true
      WHERE ${go})`;
}

interface StoredStripe {
  subject: string;
  bucket: number | string;
  bucket_ms: number | string;
  counts: number[] | string;
}

/** Seconds until some stripe has room again, from the stripes' JSON (none stored: at once, one second). */
export function stripesRetryAfter(json: unknown, window: Window, now: Date): number {
  const stripes = (typeof json === "string" ? JSON.parse(json) : json) as StoredStripe[] | null;
  if (!stripes?.length) return 1;
  const soonest = Math.min(
    ...stripes.map((s) => {
      const index = Number(s.subject.slice(s.subject.lastIndexOf("/") + 1));
      const state: Bucketed = { bucket: Number(s.bucket), counts: countsOf(s.counts) };
      return Number(s.bucket_ms) === bucketMs(window) ? freesAt(state, stripeLimit(window, index), window, now) : now.getTime() + window.windowSeconds * 1000;
    }),
  );
  return secondsUntil(soonest, now);
}

/** The slot a city-wide take answered (see takeCtes): the stripe's count when taken, the soonest stripe's room when refused. */
export function stripedSlot(row: Record<string, unknown>, name: string, window: Window, now: Date): Slot {
  if (row[`${name}_allowed`] !== true)
    return { allowed: false, used: window.limit, remaining: 0, retryAfterSeconds: stripesRetryAfter(row[`${name}_stripes`], window, now) };
  const subject = String(row[`${name}_subject`]);
  const share = stripeLimit(window, Number(subject.slice(subject.lastIndexOf("/") + 1)));
  const used = usedOf({ bucket: Number(row[`${name}_bucket`]), counts: countsOf(row[`${name}_counts`]) }, window, now);
  return { allowed: true, used, remaining: Math.max(0, share - used), retryAfterSeconds: 0 };
}
