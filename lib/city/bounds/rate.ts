import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { CityError } from "@/lib/errors";
import {
  type Bucketed,
  bucketMs,
  bucketOf,
  bumpedSql,
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
import { stripedCtes, stripedSlot } from "./rate-stripes";

export { RATE_BUCKETS, secondsUntil, type Slot, type Window } from "./rate-buckets";
export { cityWindow, RATE_STRIPES, withReach } from "./rate-stripes";

/*
 * Rate windows in constant work: a window is one row of RATE_BUCKETS + 1 counts per time bucket
 * (lib/city/bounds/rate-buckets.ts), not the list of its attempts' times. A take shifts the counts to the
 * current bucket and adds one only while fewer than `limit` are counted in them, so at most
 * `limit` attempts fall in any `windowSeconds` (never more), and an attempt keeps counting for
 * between windowSeconds and windowSeconds + one bucket (windowSeconds / RATE_BUCKETS): the window
 * slides in steps of a bucket. A city-wide window is counted over stripes (rate-stripes.ts), so
 * no row is one that every caller locks.
 */

/** Expired windows of any subject removed per take: each take adds at most one row, so the backlog shrinks. */
export const RATE_SWEEP_BATCH = 32;

const moment = (at: Date) => sql`${at.toISOString()}::timestamptz`;

/** When a window whose newest counted bucket is the current one has no attempt left in it. */
function expiresAt(window: Window, now: Date): Date {
  return new Date((bucketOf(window, now) + RATE_BUCKETS + 1) * bucketMs(window));
}

/**
 * The one statement that counts an attempt against a per-subject window: an upsert of the
 * window's row whose SET shifts its counts to the current bucket and adds this one only while
 * fewer than `limit` are counted. ON CONFLICT locks the row and computes the SET from its latest
 * version, so N parallel takers of one window on every instance let exactly `limit` through, in one
 * round trip, with no advisory lock and no count that could read an older snapshot. `source` (a
 * FROM ... WHERE clause) makes the take conditional on another CTE of the same statement. Its
 * columns: allowed, subject, bucket, counts, stripes (null) (read back with slotColumns and slotOf).
 */
export function takeWindowSql(window: Window, now: Date, source: SQL = sql``, chosen?: ChosenSubject): SQL {
  if (window.stripes) throw new Error(`${window.scope} is city-wide: take it with takeCtes`);
  const { scope } = window;
  const subject = chosen?.subject ?? sql`${window.subject}`;
  const limit = chosen?.limit ?? sql`${window.limit}::int`;
  const shifted = shiftedSql(window, now);
  const room = sql`${countSql(shifted)} < ${limit}::int`;
  const cur = sql`${bucketOf(window, now)}::bigint`;
  const expires = moment(expiresAt(window, now));
  return sql`
    INSERT INTO rate_windows AS w (scope, subject, bucket, bucket_ms, counts, expires_at, allowed)
    SELECT ${scope}, ${subject}, ${cur}, ${bucketMs(window)}::bigint,
      CASE WHEN ${limit}::int > 0 THEN ${freshCountsSql(true)} ELSE ${freshCountsSql(false)} END, ${expires}, ${limit}::int > 0 ${source}
    ON CONFLICT (scope, subject) DO UPDATE SET
      allowed = ${room},
      counts = CASE WHEN ${room} THEN ${bumpedSql(shifted)} ELSE ${shifted} END,
      bucket = greatest(w.bucket, ${cur}),
      bucket_ms = ${bucketMs(window)}::bigint,
      expires_at = CASE WHEN ${room} THEN greatest(w.expires_at, ${expires}) ELSE w.expires_at END
    RETURNING allowed, subject, bucket, counts, NULL::json AS stripes`;
}

/**
 * A per-subject window whose subject and limit the statement chooses (SQL scalars of its other
 * CTEs): the gate's overflow buckets (gate-windows.ts). Its windowSeconds stay the window's.
 */
export interface ChosenSubject {
  subject: SQL;
  limit: SQL;
}

/**
 * The CTEs that take a window as CTE `name` (its columns selected with slotColumns(name)): one
 * upsert for a per-subject window, the stripe CTEs for a city-wide one (rate-stripes.ts).
 */
export function takeCtes(name: string, window: Window, now: Date, source: SQL = sql``, chosen?: ChosenSubject): SQL {
  return window.stripes ? stripedCtes(name, window, now, source) : sql`${sql.raw(name)} AS (${takeWindowSql(window, now, source, chosen)})`;
}

/**
 * Deletes up to one batch of windows whose every attempt has left, whoever they counted against
 * (attacker-chosen origins and addresses are never counted again, so nothing else would remove
 * theirs), never a window the same statement takes (nor a stripe: those never expire). SKIP
 * LOCKED keeps parallel sweeps from waiting on each other or on a take; the outer expiry check
 * sees a window taken meanwhile.
 */
export function sweepWindowsSql(now: Date, taken: readonly Window[], batch = RATE_SWEEP_BATCH): SQL {
  const at = moment(now);
  const keys = taken.filter((w) => !w.stripes);
  const keep = keys.length
    ? sql`AND (scope, subject) NOT IN (${sql.join(
        keys.map((w) => sql`(${w.scope}::text, ${w.subject}::text)`),
        sql`, `,
      )})`
    : sql``;
  return sql`
    DELETE FROM rate_windows AS d WHERE d.expires_at <= ${at} AND (d.scope, d.subject) IN (
      SELECT scope, subject FROM rate_windows WHERE expires_at <= ${at} ${keep}
      ORDER BY expires_at LIMIT ${batch} FOR UPDATE SKIP LOCKED)`;
}

/** The columns a statement selects to read a taken window back (see slotOf): `name` is its CTE. */
export function slotColumns(name: string): SQL {
  return sql.raw(
    `(SELECT allowed FROM ${name}) AS ${name}_allowed, (SELECT subject FROM ${name}) AS ${name}_subject, (SELECT bucket FROM ${name}) AS ${name}_bucket, ` +
      `(SELECT counts FROM ${name}) AS ${name}_counts, (SELECT stripes FROM ${name}) AS ${name}_stripes`,
  );
}

/** The slot a statement took in CTE `name` (selected with slotColumns), or null when it took none. */
export function slotOf(row: Record<string, unknown>, name: string, window: Window, now: Date): Slot | null {
  const allowed = row[`${name}_allowed`] as boolean | null;
  if (allowed === null || allowed === undefined) return null;
  if (window.stripes) return stripedSlot(row, name, window, now);
  const state: Bucketed = { bucket: Number(row[`${name}_bucket`] ?? 0), counts: countsOf(row[`${name}_counts`]) };
  const used = usedOf(state, window, now);
  if (allowed) return { allowed: true, used, remaining: Math.max(0, window.limit - used), retryAfterSeconds: 0 };
  return { allowed: false, used, remaining: 0, retryAfterSeconds: secondsUntil(freesAt(state, window.limit, window, now), now) };
}

/**
 * The CTEs that open a statement's WITH to take one window: the bounded sweep, then the take as
 * `slot` (its columns selected with slotColumns("slot"), read back with slotOf or requireSlotIn).
 */
export function slotCtes(window: Window, now: Date): SQL {
  return sql`rate_swept AS (${sweepWindowsSql(now, [window])}), ${takeCtes("slot", window, now)}`;
}

/**
 * Counts one attempt against a rate window, in one statement that also sweeps a bounded batch of
 * expired windows (see takeWindowSql, sweepWindowsSql). Inside a transaction, a refusal thrown
 * after it undoes the count with everything else.
 */
export async function takeSlot(db: Database, window: Window, now: Date): Promise<Slot> {
  const result = await db.execute(sql`WITH ${slotCtes(window, now)} SELECT ${slotColumns("slot")}`);
  return slotOf(rowsOf<Record<string, unknown>>(result)[0]!, "slot", window, now)!;
}

/** For doors that cannot park: take a slot or refuse with 429, Retry-After and the RateLimit headers. */
export async function requireSlot(db: Database, window: Window, now: Date, name: string): Promise<Slot> {
  return requireTaken(await takeSlot(db, window, now), window, name);
}

/** The slot a statement opened with slotCtes took, or the 429 of its full window (see requireSlot). */
export function requireSlotIn(row: Record<string, unknown>, window: Window, now: Date, name: string): Slot {
  return requireTaken(slotOf(row, "slot", window, now)!, window, name);
}

/** A taken slot, or the 429 of a full window (see requireSlot). */
export function requireTaken(slot: Slot, window: Window, name: string): Slot {
  if (!slot.allowed) throw slotRefusal(window, name, slot.retryAfterSeconds);
  return slot;
}

/** The 429 of a full window: Retry-After and the RateLimit headers come from its options. */
export function slotRefusal(window: Pick<Window, "limit" | "windowSeconds">, name: string, retryAfterSeconds: number): CityError {
  return new CityError("rate_limited", `At most ${window.limit} ${name} per ${window.windowSeconds} seconds; try again in ${retryAfterSeconds} s.`, {
    retryAfterSeconds,
    limit: { name, limit: window.limit, window_seconds: window.windowSeconds, remaining: 0 },
  });
}
