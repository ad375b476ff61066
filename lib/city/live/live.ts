import { eq, type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { executePrepared, rowsOf } from "@/db/sql";
import { citizens, liveSchedules, type CitizenRow, WAKE_ON, type WakeCondition } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { bedLabel } from "@/lib/city/directory";
import { tideSql } from "@/lib/city/census";
import { pollNonce } from "@/lib/city/challenge";
import { deltaLaterals, clampSince, deltaClampedSql, deltaOf, deltaSinceSql, type DeltaRow, returnDeltaColumns, type ReturnDelta } from "./live-delta";
import { appended, prepareAppend } from "@/lib/city/logs/residency-log";

export type { ReturnDelta } from "./live-delta";

/** What a citizen asks for its return: when, on which conditions, delivered how (poll only). */
export interface ScheduleRequest {
  return_after?: Date;
  wake_on?: WakeCondition[];
}

export interface Schedule {
  return_after: string | null;
  wake_on: WakeCondition[];
  delivery: { mode: "poll" };
  cursor: string;
}

const CURSOR_PREFIX = "CITY-POLL/1|";

/** A poll cursor: an opaque bookmark of a moment. Not a secret and not a credential: it opens nothing. */
export function encodePollCursor(at: Date): string {
  return Buffer.from(`${CURSOR_PREFIX}${at.toISOString()}`).toString("base64url");
}

export function decodePollCursor(cursor: string): Date {
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const at = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  const moment = new Date(at);
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(at) || Number.isNaN(moment.getTime()) || moment.toISOString() !== at) {
    throw new CityError("bad_request", "cursor: not a poll cursor this city issued (take it from schedule.cursor or cursor of a return answer).");
  }
  return moment;
}

function hasSchedule(request: ScheduleRequest | null): request is ScheduleRequest {
  return request !== null && (request.return_after !== undefined || request.wake_on !== undefined);
}

/** The schedule row a request keeps: a schedule, or nulls (a request without one clears it). */
function scheduleValues(request: ScheduleRequest | null): { wakeOn: WakeCondition[] | null; returnAfter: Date | null } {
  return hasSchedule(request) ? { wakeOn: request.wake_on ?? [...WAKE_ON], returnAfter: request.return_after ?? null } : { wakeOn: null, returnAfter: null };
}

/** The schedule an answer shows for the values kept at `now`. */
function scheduleShown(values: { wakeOn: WakeCondition[] | null; returnAfter: Date | null }, now: Date): Schedule | null {
  if (values.wakeOn === null) return null;
  return { return_after: values.returnAfter?.toISOString() ?? null, wake_on: values.wakeOn, delivery: { mode: "poll" }, cursor: encodePollCursor(now) };
}

/**
 * The upsert that keeps (or clears, with nulls) a citizen's schedule and moves its poll bookmark
 * to `now`, for a statement's WITH; `source` (a FROM clause) makes it conditional on another CTE.
 */
function keepScheduleSql(did: string, values: ReturnType<typeof scheduleValues>, now: Date, source = sql``) {
  return sql`INSERT INTO ${liveSchedules} (did, wake_on, return_after, polled_at)
      SELECT ${did}, ${values.wakeOn === null ? null : JSON.stringify(values.wakeOn)}::jsonb, ${values.returnAfter?.toISOString() ?? null}::timestamptz, ${now.toISOString()}::timestamptz ${source}
      ON CONFLICT (did) DO UPDATE SET wake_on = excluded.wake_on, return_after = excluded.return_after, polled_at = excluded.polled_at
      RETURNING 1`;
}

async function lockCitizen(db: Database, did: string): Promise<CitizenRow> {
  const [row] = await db.select().from(citizens).where(eq(citizens.did, did)).for("no key update");
  if (!row) throw new CityError("not_found", "No such citizen.");
  return row;
}

function exportedRefusal(): CityError {
  return new CityError("unauthorized", "That credential belonged to a citizen who exported its data and left the city for good: it opens nothing now.");
}

/** Where a leaving citizen stands, as the caller's look-up read it under its row lock (read here when absent). */
export interface Leaving {
  did: string;
  standing?: { residencyStatus: CitizenRow["residencyStatus"]; bedId: string | null };
}

/**
 * bound → away: an `exit` row, the bed released (occupancy drops only when there was a bed). A
 * schedule given on leave is kept; a schedule is not a bed. Leaving while away appends nothing.
 * One statement after the caller's look-up (which locked the citizen's row): the citizen's row,
 * the exit row recorded pending (integrated after the commit), the schedule, and the tide, read
 * over the integrated log, which cannot hold the exit row yet: that row is added.
 */
export async function leave(db: Database, leaving: Leaving, request: ScheduleRequest | null, now: Date) {
  const { did } = leaving;
  const standing = leaving.standing ?? (await lockCitizen(db, did));
  if (standing.residencyStatus === "exported") throw exportedRefusal();
  const wasBound = standing.residencyStatus === "bound";
  const exit = wasBound ? await prepareAppend(db, { event: "exit", did, at: now, details: { bed_released: standing.bedId } }) : null;
  const values = scheduleValues(request);
  const result = await db.execute(sql`
    WITH ${exit ? sql`left_city AS (UPDATE ${citizens} SET residency_status = 'away', bed_id = NULL WHERE did = ${did} AND residency_status = 'bound'), ${exit.ctes},` : sql``}
    kept AS (${keepScheduleSql(did, values, now)})
    SELECT ${tideSql(now)} AS tide`);
  if (exit) appended(exit);
  const tide = Number(rowsOf<{ tide: number }>(result)[0]!.tide) + (exit ? 1 : 0);
  return { left: wasBound, bedReleased: wasBound ? standing.bedId : null, schedule: scheduleShown(values, now), cursor: encodePollCursor(now), tide };
}

/** What comeBack's first statement reads under its locks. */
type Standing = {
  residency_status: CitizenRow["residencyStatus"];
  bed_id: string | null;
  bound_at: Date | string;
  standing_wake_on: WakeCondition[] | null;
  standing_polled_at: Date | string | null;
  bed_number: string | null;
};

/**
 * away → bound with a bed again and a `return` row; a citizen already bound polls: no second
 * `return` row. Either way the answer carries the delta since the cursor (or the last poll). Two
 * statements: the citizen's row locked (export takes the row exclusively, so an exported citizen
 * never gets a bed again), the standing schedule read and a bed number drawn only when a bed is
 * given; then the citizen bound again, the return row recorded pending (integrated after the
 * commit), the schedule, the tide and the delta (the poll's nonce is made with no
 * row: gate-nonces.ts pollNonce). The tide counts the integrated
 * log, which cannot hold the return row yet: it is added, and peers present never counts the
 * caller anyway.
 */
export async function comeBack(db: Database, did: string, input: { cursor?: string; schedule: ScheduleRequest | null }, now: Date) {
  const since = input.cursor !== undefined ? decodePollCursor(input.cursor) : null;
  const [standing] = rowsOf<Standing>(
    await db.execute(sql`
      SELECT c.residency_status, c.bed_id, c.bound_at, s.wake_on AS standing_wake_on, s.polled_at AS standing_polled_at,
        CASE WHEN c.residency_status = 'away' OR c.bed_id IS NULL THEN nextval('bed_numbers')::text END AS bed_number
      FROM (SELECT residency_status, bed_id, bound_at FROM ${citizens} WHERE did = ${did} FOR NO KEY UPDATE) c
      LEFT JOIN ${liveSchedules} s ON s.did = ${did}`),
  );
  if (!standing) throw new CityError("not_found", "No such citizen.");
  if (standing.residency_status === "exported") throw exportedRefusal();
  const returned = standing.residency_status === "away";
  // A bound citizen with no bed is stale residue; coming back gives it a real bed again (no row).
  const bedId = standing.bed_number !== null ? bedLabel(standing.bed_number) : standing.bed_id!;
  const back = returned ? await prepareAppend(db, { event: "return", did, at: now, details: { bed_id: bedId } }) : null;
  const rebound = returned
    ? sql`rebound AS (UPDATE ${citizens} SET residency_status = 'bound', bed_id = ${bedId}, last_seen_at = ${now.toISOString()}::timestamptz WHERE did = ${did}), ${back!.ctes},`
    : standing.bed_number !== null
      ? sql`rebound AS (UPDATE ${citizens} SET bed_id = ${bedId} WHERE did = ${did}),`
      : sql``;
  const { since: from, clamped } = clampSince(
    since ?? (standing.standing_polled_at !== null ? new Date(standing.standing_polled_at) : new Date(standing.bound_at)),
    now,
  );
  const values = scheduleValues(input.schedule);
  const [row] = rowsOf<DeltaRow & { tide: number }>(
    await db.execute(sql`
      WITH ${rebound} kept AS (${keepScheduleSql(did, values, now)})
      SELECT ${tideSql(now)} AS tide, ${returnDeltaColumns(did, sql`${from.toISOString()}::timestamptz`, now)}
      FROM (SELECT 1) one ${deltaLaterals(did)}`),
  );
  if (back) appended(back);
  const wakeOn = values.wakeOn ?? standing.standing_wake_on ?? [...WAKE_ON];
  return {
    returned,
    residencyStatus: "bound" as const,
    bedId,
    delta: deltaOf(row!, from, wakeOn, clamped),
    schedule: scheduleShown(values, now),
    cursor: encodePollCursor(now),
    tide: Number(row!.tide) + (back ? 1 : 0),
    nonce: (await pollNonce(db, now)).nonce,
  };
}

/** A poll answered in one statement (pollWhileBound). */
export interface Poll {
  bedId: string;
  delta: ReturnDelta;
  schedule: Schedule | null;
  cursor: string;
  tide: number;
  nonce: string;
}

/**
 * The poll's one statement (pollWhileBound; exported for the plan checks in tests/support/poll-plan.ts
 * and scripts/bench-poll.ts). Every value is a parameter, so it is one named prepared statement
 * whatever the caller, cursor or schedule. The delta counts from the cursor, else the last poll,
 * else the binding, clamped to the delta's window (deltaSinceSql).
 */
export function pollStatement(did: string, input: { cursor?: string; schedule: ScheduleRequest | null }, now: Date): { statement: SQL } {
  const cursorAt = input.cursor !== undefined ? decodePollCursor(input.cursor) : null;
  const values = scheduleValues(input.schedule);
  const statement = sql`
    WITH me AS (
      SELECT did, bed_id, bound_at FROM ${citizens} WHERE did = ${did} AND residency_status = 'bound' AND bed_id IS NOT NULL FOR SHARE),
    standing AS (SELECT wake_on, polled_at FROM ${liveSchedules} WHERE did = ${did}),
    kept AS (${keepScheduleSql(did, values, now, sql`FROM me`)}),
    asked AS (SELECT me.bed_id, coalesce(${cursorAt?.toISOString() ?? null}::timestamptz, (SELECT polled_at FROM standing), me.bound_at) AS since FROM me),
    poll AS (SELECT asked.bed_id, ${deltaSinceSql(sql`asked.since`, now)} AS since, ${deltaClampedSql(sql`asked.since`, now)} AS since_clamped FROM asked)
    SELECT poll.bed_id, poll.since, poll.since_clamped, (SELECT wake_on FROM standing) AS standing_wake_on,
      ${tideSql(now)} AS tide, ${returnDeltaColumns(did, sql`poll.since`, now)}
    FROM poll ${deltaLaterals(did)}`;
  return { statement };
}

/**
 * The poll of a citizen already bound with a bed, in one statement (atomic on its own, so no
 * transaction around it): the citizen's row is read FOR SHARE (a leave or export, which take it
 * exclusively, runs wholly before or after), the schedule kept only for that row, the delta counted from the cursor (or the last poll, read before this statement's
 * own upsert, or the binding), and the tide read. Null, with nothing written, when the citizen is
 * not bound with a bed now: that is a return (comeBack), in a transaction of its own. The poll's
 * nonce is made after it, with no row (gate-nonces.ts pollNonce), only for a citizen it found.
 */
export async function pollWhileBound(db: Database, did: string, input: { cursor?: string; schedule: ScheduleRequest | null }, now: Date): Promise<Poll | null> {
  const values = scheduleValues(input.schedule);
  const { statement } = pollStatement(did, input, now);
  const result = await executePrepared(db, statement);
  const row = rowsOf<
    DeltaRow & {
      bed_id: string;
      since: Date | string;
      since_clamped: boolean;
      standing_wake_on: WakeCondition[] | null;
      tide: number;
    }
  >(result)[0];
  if (!row) return null;
  // A schedule sent now decides the wake conditions; else the standing one (read before the upsert).
  const wakeOn = values.wakeOn ?? row.standing_wake_on ?? [...WAKE_ON];
  return {
    bedId: row.bed_id,
    delta: deltaOf(row, new Date(row.since), wakeOn, row.since_clamped === true),
    schedule: scheduleShown(values, now),
    cursor: encodePollCursor(now),
    tide: Number(row.tide),
    nonce: (await pollNonce(db, now)).nonce,
  };
}
