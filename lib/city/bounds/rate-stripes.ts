import { type SQL, sql } from "drizzle-orm";
import {
  type Bucketed,
  bucketMs,
  bucketOf,
  bumpedSql,
  countAt,
  countSql,
  countsOf,
  freesAt,
  freshCountsSql,
  RATE_BUCKETS,
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
 * A taker may also be given its reach past a floor in steps (withSteps): in each step (a bucket) a
 * stripe lets it past the larger of its share of the floor and what its earlier steps still count
 * only by what this step releases to that stripe (stepRelease), read from the same row in the same
 * statement as its take: no row is added, and what parallel takers take of a step never passes it.
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

/** Stripe `s`'s share of `total` cut over `n` stripes: the first total % n stripes hold one more (the slots s, s + n, s + 2n, ... below total). */
function shareOf(total: number, n: number, s: number): number {
  return Math.floor(total / n) + (s < total % n ? 1 : 0);
}

/**
 * Stripe `s`'s share of what this taker may reach. The reach is cut as the limit is (the first
 * reach % N stripes one more), so no stripe's share of a reach is above its share of the limit.
 */
export function stripeLimit(window: Window, s: number): number {
  return shareOf(reachOf(window), window.stripes ?? 1, s);
}

/** Steps a slot is counted in: the window's RATE_BUCKETS and the current one (rate-buckets.ts). */
export const STEP_CYCLE = RATE_BUCKETS + 1;

/**
 * A city-wide taker whose reach past `floor` is released in steps: in any step it takes at most
 * stepPortion(reach - floor) of that part (the stripes' stepRelease), whatever it took before.
 */
export function withSteps(window: Window, floor: number): Window {
  return { ...window, steps: { floor: Math.max(0, Math.min(reachOf(window), Math.floor(floor))) } };
}

/**
 * The slots of a stepped part (`part`: reach - floor) released in each step: a STEP_CYCLE-th of it,
 * rounded down, at least one (a part smaller than STEP_CYCLE then fills in `part` steps, and waits
 * for its oldest step to leave). Why every step opens slots, whatever was taken before (per stripe,
 * with no taker but stepped ones and those kept under the floor): in step j a stripe lets its count
 * reach at most max(floor, B_j) + r_j (B_j: its count before step j, r_j: what j releases to it), so
 * its count C_j in step j is at most max(floor - B_j, 0) + r_j. Take the last step j* of the
 * RATE_BUCKETS before step k with B_j* < floor: B_j* + C_j* <= floor + r_j*, and every later step
 * adds at most its release, so B_k <= floor + (r over the RATE_BUCKETS steps before k) (and if
 * there is no such j*, B_k <= that sum). stepRelease releases a stripe, over any STEP_CYCLE steps in
 * a row, at most its share of the part, so B_k <= reach share - r_k: step k has r_k slots on it.
 * With a twelfth of the part a step (RATE_BUCKETS portions), a flood would hold the whole part at
 * every 13th step, and that step would open none.
 */
export function stepPortion(part: number): number {
  return part > 0 ? Math.max(1, Math.floor(part / STEP_CYCLE)) : 0;
}

/**
 * What step `step` (a bucket number) releases to each stripe of a stepped window. The part's slots
 * (floor, floor + 1, ..., reach - 1; slot x belongs to stripe x % N, as stripeLimit cuts them) are
 * released in turn, a portion per step: step k the portion starting at slot floor + (k * portion) % part,
 * wrapping inside the part. So STEP_CYCLE steps in a row release distinct slots when the part holds
 * them, and each stripe is released over a cycle no more than its share of the part.
 */
export function stepRelease(window: Window, step: number): number[] {
  const n = window.stripes ?? 1;
  const release = new Array<number>(n).fill(0);
  if (!window.steps) return release;
  const floor = window.steps.floor;
  const part = reachOf(window) - floor;
  const portion = stepPortion(part);
  if (portion <= 0) return release;
  const start = ((((step % part) * portion) % part) + part) % part;
  for (let j = 0; j < portion; j++) release[(floor + ((start + j) % part)) % n]! += 1;
  return release;
}

/** Stripe `s`'s share of a stepped window's floor (its reach when not stepped). */
function stripeFloor(window: Window, s: number): number {
  return window.steps ? shareOf(window.steps.floor, window.stripes ?? 1, s) : stripeLimit(window, s);
}

/**
 * What stripe `s` lets this taker reach in a step: its share of the reach, and for a stepped taker
 * no more than the larger of its share of the floor and what it counted before this step (`before`)
 * plus what this step releases to it (`released`).
 */
export function steppedLimit(window: Window, s: number, before: number, released: number): number {
  const lim = stripeLimit(window, s);
  return window.steps ? Math.min(lim, Math.max(stripeFloor(window, s), before) + released) : lim;
}

function stripeSubject(window: Window, s: number): string {
  return `${window.subject}/${s}`;
}

/** A PostgreSQL array literal of these values (each element quoted: a subject is text). */
function arrayLiteral(values: readonly (string | number)[]): string {
  return `{${values.map((v) => (typeof v === "number" ? String(v) : `"${v.replace(/[\\"]/g, "\\$&")}"`)).join(",")}}`;
}

/**
 * SQL rows (subject, lim, floor, step, ord) of every stripe at `now`: its share of the reach, of
 * the floor (the reach when not stepped) and what this step releases to it (0 when not stepped),
 * ord counted from stripe `home`. Sent as five arrays (five parameters, each a literal), unnested
 * in stripe order: the ceiling's 32 stripes were 160 parameters, each its own SQL fragment built,
 * walked and bound on every admission.
 */
function stripesValues(window: Window, home: number, now: Date): SQL {
  const n = window.stripes ?? 1;
  const release = stepRelease(window, bucketOf(window, now));
  const stripes = Array.from({ length: n }, (_, s) => s);
  const subjects = arrayLiteral(stripes.map((s) => stripeSubject(window, s)));
  const lims = arrayLiteral(stripes.map((s) => stripeLimit(window, s)));
  const floors = arrayLiteral(stripes.map((s) => stripeFloor(window, s)));
  const steps = arrayLiteral(release);
  const ords = arrayLiteral(stripes.map((s) => (s - home + n) % n));
  return sql`(SELECT * FROM unnest(${subjects}::text[], ${lims}::int[], ${floors}::int[], ${steps}::int[], ${ords}::int[]) AS v(subject, lim, floor, step, ord))`;
}

/**
 * SQL: what a stripe (its values `v`: lim, floor, step) lets this taker reach now, from its row's
 * counts shifted to the current step (`shifted`): steppedLimit, with what it counted before this
 * step being all its counts but the current step's. For a taker not stepped (floor = lim, step 0): lim.
 */
function limitSql(v: string, shifted: SQL): SQL {
  const s = sql.raw(v);
  return sql`least(${s}.lim, greatest(${s}.floor, ${countSql(shifted)} - (${shifted})[1]) + ${s}.step)`;
}

/**
 * SQL (FROM items): the window's stored stripes as `row`, joined with their values `s` (lim,
 * floor, step, ord), and `k`: each stripe's count now (k.count: countSql of its counts shifted to
 * the current step) and what it lets this taker reach now (k.reach: limitSql). Each is computed
 * once per stripe, in a LATERAL subquery behind OFFSET 0 (the planner does not flatten it): written
 * inline, a stripe's shifted counts were computed again for every use of them, six times a stripe
 * in a room's filter and columns (the rows and values are the same).
 */
function stripesNow(window: Window, now: Date, stripes: SQL, row: string): SQL {
  const r = sql.raw(row);
  return sql`rate_windows ${r} JOIN ${stripes} s ON s.subject = ${r}.subject
    CROSS JOIN LATERAL (SELECT a.count, least(s.lim, greatest(s.floor, a.count - a.first) + s.step) AS reach FROM (
      SELECT ${countSql(sql.raw("shifted.counts"))} AS count, (shifted.counts)[1] AS first
      FROM (SELECT ${shiftedSql(window, now, row)} AS counts OFFSET 0) shifted OFFSET 0) a) k`;
}

/** SQL: the stored stripes (`r`) as JSON, what a refusal's Retry-After is computed from. */
function stripesJson(window: Window, stripes: SQL): SQL {
  return sql`(SELECT json_agg(json_build_object('subject', r.subject, 'bucket', r.bucket, 'bucket_ms', r.bucket_ms, 'counts', r.counts))
    FROM rate_windows r JOIN ${stripes} s ON s.subject = r.subject WHERE r.scope = ${window.scope})`;
}

/**
 * SQL (a SELECT of one row): whether the window has room, read from the statement's snapshot (a
 * stripe with room, or one not stored yet), and its stripes as JSON (see stripesRetryAfter); with
 * `stripes: false` the room alone (a caller that reads the stripes only when there is none:
 * stripesJsonSql).
 */
export function stripesRoomSql(window: Window, now: Date, options: { stripes?: boolean } = {}): SQL {
  const json = options.stripes === false ? sql`` : sql`, ${stripesJsonSql(window, now)} AS stripes`;
  return sql`SELECT count(*) FILTER (WHERE k.count < k.reach) > 0 OR count(*) < ${window.stripes ?? 1}::int AS room${json}
    FROM ${stripesNow(window, now, stripesValues(window, 0, now), "r")} WHERE r.scope = ${window.scope}`;
}

/** SQL (a scalar subquery): the window's stored stripes as JSON, as stripesRoomSql's `stripes` reads them. */
export function stripesJsonSql(window: Window, now: Date): SQL {
  return stripesJson(window, stripesValues(window, 0, now));
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
  // The charge reads the stripe's limit from the latest version of its row (its earlier steps' count).
  const charge = (locked: SQL) =>
    sql`UPDATE rate_windows w SET counts = ${bumpedSql(shifted)}, bucket = greatest(w.bucket, ${cur}), bucket_ms = ${b}, allowed = true
      FROM ${locked} c WHERE w.scope = ${scope} AND w.subject = c.subject AND ${count} < ${limitSql("c", shifted)} RETURNING ${columns}`;
  const free = (when: SQL) =>
    sql`SELECT w.subject, r.lim, r.floor, r.step FROM rate_windows w JOIN ${n("room")} r ON r.subject = w.subject WHERE w.scope = ${scope} AND ${when}
      ORDER BY r.free DESC, r.ord LIMIT 1 FOR UPDATE OF w SKIP LOCKED`;
  // The stripe a first take stores holding this attempt: one that lets this taker reach a slot now.
  const first = sql`(SELECT subject FROM ${n("new")} WHERE least(lim, floor + step) > 0 ORDER BY ord LIMIT 1)`;
  return sql`
    ${n("stripes")} AS ${stripesValues(window, home, now)},
    ${n("room")} AS (
      SELECT w.subject, s.lim, s.floor, s.step, s.ord, k.reach - k.count AS free FROM ${stripesNow(window, now, n("stripes"), "w")}
      WHERE w.scope = ${scope} AND ${go} AND k.count < k.reach),
    ${n("pick")} AS (${free(sql`true`)}),
    ${n("took")} AS (${charge(n("pick"))}),
    ${n("again")} AS (${free(sql`w.subject <> (SELECT subject FROM ${n("pick")}) AND NOT EXISTS (SELECT 1 FROM ${n("took")})`)}),
    ${n("retook")} AS (${charge(n("again"))}),
    ${n("wait")} AS (
      SELECT w.subject, s.lim, s.floor, s.step FROM rate_windows w JOIN ${n("stripes")} s ON s.subject = w.subject
      WHERE w.scope = ${scope} AND ${go} AND NOT EXISTS (SELECT 1 FROM ${n("pick")}) AND ${count} < ${limitSql("s", shifted)}
      ORDER BY w.subject LIMIT 1 FOR UPDATE OF w),
    ${n("waited")} AS (${charge(n("wait"))}),
    ${n("new")} AS (
      SELECT s.subject, s.ord, s.lim, s.floor, s.step FROM ${n("stripes")} s
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

/**
 * The stored stripes' JSON, by stripe number. A stripe of another step length (the window's length
 * was changed) is read as SQL reads it (rate_window_at): its whole count in the current step; `foreign`.
 */
function storedStripes(json: unknown, window: Window, now: Date): Map<number, Bucketed & { foreign?: true }> | null {
  const stripes = (typeof json === "string" ? JSON.parse(json) : json) as StoredStripe[] | null;
  if (!stripes?.length) return null;
  return new Map(
    stripes.map((s) => {
      const counts = countsOf(s.counts);
      const state =
        Number(s.bucket_ms) === bucketMs(window)
          ? { bucket: Number(s.bucket), counts }
          : { bucket: bucketOf(window, now), counts: [counts.reduce((a, b) => a + b, 0)], foreign: true as const };
      return [Number(s.subject.slice(s.subject.lastIndexOf("/") + 1)), state] as const;
    }),
  );
}

/** The count of `state` in bucket `at` that is not its step `at`'s own (what its earlier steps still count). */
function countBefore(state: Bucketed, at: number): number {
  return countAt(state, at) - (at === state.bucket ? (state.counts[0] ?? 0) : 0);
}

/**
 * When (epoch ms) stripe `s` lets this taker through again: the start of the first step whose
 * count is under the stripe's limit for it (steppedLimit, with what that step releases).
 */
function stripeFreesAt(state: Bucketed, s: number, window: Window, now: Date): number {
  if (!window.steps) return freesAt(state, stripeLimit(window, s), window, now);
  const cur = bucketOf(window, now);
  const from = Math.max(cur, state.bucket);
  // Past the counts' last step nothing is counted; a stripe still waits for a step that releases it a slot.
  for (let at = from; at <= from + 2 * STEP_CYCLE + 1; at++) {
    const released = stepRelease(window, at)[s]!;
    if (countAt(state, at) < steppedLimit(window, s, countBefore(state, at), released)) return at === cur ? now.getTime() : at * bucketMs(window);
  }
  return now.getTime() + window.windowSeconds * 1000;
}

/** Seconds until some stripe has room again, from the stripes' JSON (none stored: at once, one second). */
export function stripesRetryAfter(json: unknown, window: Window, now: Date): number {
  const stored = storedStripes(json, window, now);
  if (!stored) return 1;
  const n = window.stripes ?? 1;
  let soonest = Infinity;
  for (let s = 0; s < n; s++) {
    const state = stored.get(s);
    // A stripe not stored counts nothing: it frees when a step releases it a slot.
    const at = state?.foreign
      ? now.getTime() + window.windowSeconds * 1000
      : stripeFreesAt(state ?? { bucket: bucketOf(window, now), counts: [] }, s, window, now);
    soonest = Math.min(soonest, at);
  }
  return secondsUntil(soonest, now);
}

/**
 * The slots this taker may still take now, from the stripes' JSON: over every stripe, its limit
 * in this step (steppedLimit) less what it counts (a stripe not stored counts nothing).
 */
export function stripesRoom(json: unknown, window: Window, now: Date): number {
  const stored = storedStripes(json, window, now) ?? new Map<number, Bucketed>();
  const cur = bucketOf(window, now);
  const release = stepRelease(window, cur);
  let room = 0;
  for (let s = 0; s < (window.stripes ?? 1); s++) {
    const state = stored.get(s) ?? { bucket: cur, counts: [] };
    room += Math.max(0, steppedLimit(window, s, countBefore(state, Math.max(cur, state.bucket)), release[s]!) - countAt(state, cur));
  }
  return room;
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
