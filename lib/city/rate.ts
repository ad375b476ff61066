import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { CityError } from "@/lib/errors";

export interface Window {
  scope: string;
  subject: string;
  limit: number;
  windowSeconds: number;
}

export interface Slot {
  allowed: boolean;
  /** Attempts counted in the window, this one included when allowed. */
  used: number;
  remaining: number;
  /** Seconds until the oldest counted attempt leaves the window (when refused). */
  retryAfterSeconds: number;
}

/** Expired windows of any subject removed per take: each take adds at most one row, so the backlog shrinks. */
export const RATE_SWEEP_BATCH = 32;

const moment = (at: Date) => sql`${at.toISOString()}::timestamptz`;

/**
 * The one statement that counts an attempt against a window: an upsert of the window's row whose
 * SET keeps the attempts still in the window and adds this one only while fewer than `limit` are
 * counted. ON CONFLICT locks the row and computes the SET from its latest version, so N parallel
 * takers of one window on every instance let exactly `limit` through, in one round trip, with no
 * advisory lock and no count that could read an older snapshot. `source` (a FROM ... WHERE
 * clause) makes the take conditional on another CTE of the same statement.
 */
export function takeWindowSql(window: Window, now: Date, source: SQL = sql``): SQL {
  const { scope, subject, limit, windowSeconds } = window;
  const since = moment(new Date(now.getTime() - windowSeconds * 1000));
  const expires = moment(new Date(now.getTime() + windowSeconds * 1000));
  const at = moment(now);
  const room = sql`(SELECT count(*) FROM unnest(w.ats) AS a WHERE a > ${since}) < ${limit}::int`;
  return sql`
    INSERT INTO rate_windows AS w (scope, subject, ats, expires_at, allowed)
    SELECT ${scope}, ${subject}, CASE WHEN ${limit}::int > 0 THEN ARRAY[${at}] ELSE '{}'::timestamptz[] END, ${expires}, ${limit}::int > 0 ${source}
    ON CONFLICT (scope, subject) DO UPDATE SET
      allowed = ${room},
      ats = ARRAY(SELECT a FROM unnest(CASE WHEN ${room} THEN w.ats || ${at} ELSE w.ats END) AS a WHERE a > ${since} ORDER BY a),
      expires_at = CASE WHEN ${room} THEN greatest(w.expires_at, ${expires}) ELSE w.expires_at END
    RETURNING allowed, cardinality(ats) AS used, ats[1] AS oldest`;
}

/**
 * Deletes up to one batch of windows whose every attempt has left, whoever they counted against
 * (attacker-chosen origins and addresses are never counted again, so nothing else would remove
 * theirs), never a window the same statement takes. SKIP LOCKED keeps parallel sweeps from
 * waiting on each other or on a take; the outer expiry check sees a window taken meanwhile.
 */
export function sweepWindowsSql(now: Date, taken: readonly Window[], batch = RATE_SWEEP_BATCH): SQL {
  const at = moment(now);
  const keep = taken.length
    ? sql`AND (scope, subject) NOT IN (${sql.join(
        taken.map((w) => sql`(${w.scope}::text, ${w.subject}::text)`),
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
    `(SELECT allowed FROM ${name}) AS ${name}_allowed, (SELECT used FROM ${name}) AS ${name}_used, (SELECT oldest FROM ${name}) AS ${name}_oldest`,
  );
}

/** The slot a statement took in CTE `name` (selected with slotColumns), or null when it took none. */
export function slotOf(row: Record<string, unknown>, name: string, window: Window, now: Date): Slot | null {
  const allowed = row[`${name}_allowed`] as boolean | null;
  if (allowed === null || allowed === undefined) return null;
  const used = Number(row[`${name}_used`]);
  if (allowed) return { allowed: true, used, remaining: Math.max(0, window.limit - used), retryAfterSeconds: 0 };
  const oldest = row[`${name}_oldest`] as Date | string | null;
  const from = oldest ? new Date(oldest).getTime() : now.getTime();
  const retryAfterSeconds = Math.max(1, Math.ceil((from + window.windowSeconds * 1000 - now.getTime()) / 1000));
  return { allowed: false, used, remaining: 0, retryAfterSeconds };
}

/**
 * The CTEs that open a statement's WITH to take one window: the bounded sweep, then the take as
 * `slot` (its columns selected with slotColumns("slot"), read back with slotOf or requireSlotIn).
 */
export function slotCtes(window: Window, now: Date): SQL {
  return sql`rate_swept AS (${sweepWindowsSql(now, [window])}), slot AS (${takeWindowSql(window, now)})`;
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
