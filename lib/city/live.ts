import { eq } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, liveSchedules, type CitizenRow, WAKE_ON, type WakeCondition } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { assignBed } from "./citizens";
import { returnDelta } from "./live-delta";
import { appendLog } from "./residency-log";
import { returnCitizen } from "./residency";

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

/** Keeps (or clears, with null) the citizen's schedule and moves its poll bookmark to `now`. */
async function keepSchedule(db: Database, did: string, request: ScheduleRequest | null, now: Date): Promise<Schedule | null> {
  const values = hasSchedule(request)
    ? { wakeOn: request.wake_on ?? [...WAKE_ON], returnAfter: request.return_after ?? null }
    : { wakeOn: null, returnAfter: null };
  await db
    .insert(liveSchedules)
    .values({ did, ...values, polledAt: now })
    .onConflictDoUpdate({ target: liveSchedules.did, set: { ...values, polledAt: now } });
  if (values.wakeOn === null) return null;
  return { return_after: values.returnAfter?.toISOString() ?? null, wake_on: values.wakeOn, delivery: { mode: "poll" }, cursor: encodePollCursor(now) };
}

async function lockCitizen(db: Database, did: string): Promise<CitizenRow> {
  const [row] = await db.select().from(citizens).where(eq(citizens.did, did)).for("no key update");
  if (!row) throw new CityError("not_found", "No such citizen.");
  return row;
}

function exportedRefusal(): CityError {
  return new CityError("unauthorized", "That credential belonged to a citizen who exported its data and left the city for good: it opens nothing now.");
}

/**
 * bound → away: an `exit` row, the bed released (occupancy drops only when there was a bed). A
 * schedule given on leave is kept; a schedule is not a bed. Leaving while away appends nothing.
 */
export async function leave(db: Database, did: string, request: ScheduleRequest | null, now: Date) {
  const citizen = await lockCitizen(db, did);
  if (citizen.residencyStatus === "exported") throw exportedRefusal();
  const wasBound = citizen.residencyStatus === "bound";
  if (wasBound) {
    await db.update(citizens).set({ residencyStatus: "away", bedId: null }).where(eq(citizens.did, did));
    await appendLog(db, { event: "exit", did, at: now, details: { bed_released: citizen.bedId } });
  }
  const schedule = await keepSchedule(db, did, request, now);
  return { left: wasBound, bedReleased: wasBound ? citizen.bedId : null, schedule, cursor: encodePollCursor(now) };
}

/**
 * away → bound with a bed again and a `return` row; a citizen already bound polls: no second
 * `return` row. Either way the answer carries the delta since the cursor (or the last poll).
 */
export async function comeBack(db: Database, did: string, input: { cursor?: string; schedule: ScheduleRequest | null }, now: Date) {
  const since = input.cursor !== undefined ? decodePollCursor(input.cursor) : null;
  let citizen = await lockCitizen(db, did);
  // Under the row lock export takes: an exported citizen never gets a bed again.
  if (citizen.residencyStatus === "exported") throw exportedRefusal();
  const [standing] = await db.select().from(liveSchedules).where(eq(liveSchedules.did, did));
  const returned = citizen.residencyStatus === "away";
  if (returned) citizen = await returnCitizen(db, citizen, now);
  else if (citizen.bedId === null) {
    // A bound citizen with no bed is stale residue; coming back gives it a real bed again.
    const bedId = await assignBed(db);
    citizen = { ...citizen, bedId };
    await db.update(citizens).set({ bedId }).where(eq(citizens.did, did));
  }
  const from = since ?? standing?.polledAt ?? citizen.boundAt;
  const wakeOn = hasSchedule(input.schedule) ? (input.schedule.wake_on ?? [...WAKE_ON]) : (standing?.wakeOn ?? [...WAKE_ON]);
  const delta = await returnDelta(db, did, from, wakeOn, now);
  const schedule = await keepSchedule(db, did, input.schedule, now);
  return { citizen, returned, delta, schedule, cursor: encodePollCursor(now) };
}
