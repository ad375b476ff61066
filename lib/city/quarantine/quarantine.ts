import { and, desc, eq, lt, type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { executePrepared, rowsOf } from "@/db/sql";
import { quarantine } from "@/db/schema";
import type { CityError } from "@/lib/errors";
import {
  requireTaken,
  slotColumns,
  slotOf,
  sweepWindowsSql,
  takeWindowSql,
  type Window,
  type Charge,
  chargeSql,
  cityFull,
  jsonbRowBytes,
  newcomerSql,
  type StoreName,
  citizenShare,
} from "@/lib/city/bounds";

export interface Parked {
  parked: true;
  quarantine_id: number;
  reason: string;
}

/**
 * Parked writes a citizen may leave on one door per hour (over its window or while restricted):
 * twice the door's own hourly window. Past it a write is refused 429 and stored nowhere.
 */
export const PARKED_CAP_FACTOR = 2;
export const PARKED_WINDOW_SECONDS = 3600;

export function parkedCap(perHour: number): number {
  return PARKED_CAP_FACTOR * perHour;
}

/** A write a door can park: the INSERT itself, and how its returned row becomes the answer. */
export interface ParkableWrite<T> {
  /** An INSERT ... SELECT <values> `source` ... RETURNING <columns>: `source` is the FROM ... WHERE that lets it run. */
  insert: (source: SQL) => SQL;
  /** The answer from the row the INSERT returned (as JSON: timestamps are ISO strings). */
  read: (row: Record<string, unknown>) => T;
  /** What the write needs besides its slot (a recipient, a parent post), checked in the same statement; unmet, `refusal` is thrown. */
  needs?: { condition: SQL; refusal: () => CityError };
}

const DOOR_SLOT = "door_slot";
const PARK_SLOT = "park_slot";

/**
 * A write on a door that can park: while the citizen is restricted, or once its hourly window is
 * full, the write is parked in quarantine (visible to its author, never sealed, never dropped)
 * instead of being stored or raced; past the published parked cap it is refused 429, stored nowhere.
 *
 * One statement (one round trip): the door's window is taken, then either the write runs or the
 * parked window is taken and the write parked, each data-modifying CTE gated on the one before.
 * `restricted` is the tier the door read with its caller, under the citizen's row lock that every
 * restriction takes exclusively (lib/doors/pipeline/stages/caller.ts), so it cannot change before the write commits.
 * A refusal thrown after it (the parked cap, an unmet need) rolls the whole statement back with
 * the door's transaction.
 */
export async function writeOrPark<T>(
  db: Database,
  entry: {
    did: string;
    restricted: boolean;
    door: string;
    perHour: number;
    payload: Record<string, unknown>;
    now: Date;
    store: StoreName;
    bytes: number;
    /** May use the store's reserve (distress filings): charged as a settled citizen's write, still within the citizen's own share. */
    reserve?: boolean;
  },
  write: ParkableWrite<T>,
): Promise<T | Parked> {
  const doorWindow: Window = { scope: entry.door, subject: entry.did, limit: entry.perHour, windowSeconds: 3600 };
  const parkedWindow: Window = { scope: `parked:${entry.door}`, subject: entry.did, limit: parkedCap(entry.perHour), windowSeconds: PARKED_WINDOW_SECONDS };
  const reason = entry.restricted
    ? "restricted: every write on this door is parked until an appeal is granted"
    : `flood: more than ${entry.perHour} writes per hour on ${entry.door}; parked, not raced`;
  const needs = write.needs?.condition ?? sql`true`;
  const windows = entry.restricted ? [parkedWindow] : [doorWindow, parkedWindow];
  const at = sql`${entry.now.toISOString()}::timestamptz`;
  // The city-wide store bounds (lib/city/bounds/store-bounds.ts): the write charges its store only once
  // its window allowed it and its needs are met, the parked write charges the quarantine only once
  // the parked window allowed it; each INSERT runs only from its charge.
  const payload = JSON.stringify(entry.payload);
  const newcomer = newcomerSql(entry.did, entry.now);
  const subject = citizenShare(entry.did);
  // A write that may use the reserve (a distress filing) is charged as a settled citizen's: newcomers'
  // lines do not apply to it, nor its network's part (other citizens of its network cannot refuse it).
  const storeCharge: Charge = {
    store: entry.store,
    bytes: entry.bytes,
    newcomer: entry.reserve ? sql`false` : newcomer,
    now: entry.now,
    subject,
    ...(entry.reserve ? { network: false as const } : {}),
  };
  const parkCharge: Charge = { store: "quarantine", bytes: jsonbRowBytes(payload), newcomer, now: entry.now, subject };
  // A named prepared statement (db/sql.ts): its plan is kept per connection, not made again on every write.
  const result = await executePrepared(
    db,
    sql`
    WITH rate_swept AS (${sweepWindowsSql(entry.now, windows)}),
    ${entry.restricted ? sql`` : sql`${sql.raw(DOOR_SLOT)} AS (${takeWindowSql(doorWindow, entry.now)}),`}
    ${sql.raw(PARK_SLOT)} AS (${takeWindowSql(parkedWindow, entry.now, entry.restricted ? sql`` : sql.raw(`FROM ${DOOR_SLOT} WHERE NOT ${DOOR_SLOT}.allowed`))}),
    ${entry.restricted ? sql`` : sql`store_charged AS (${chargeSql(storeCharge, sql`FROM ${sql.raw(DOOR_SLOT)} WHERE ${sql.raw(DOOR_SLOT)}.allowed AND ${needs}`)}),`}
    park_charged AS (${chargeSql(parkCharge, sql`FROM ${sql.raw(PARK_SLOT)} WHERE ${sql.raw(PARK_SLOT)}.allowed`)}),
    written AS (${write.insert(entry.restricted ? sql`WHERE false` : sql`FROM store_charged`)}),
    parked AS (
      INSERT INTO quarantine (did, door, reason, payload, parked_at)
      SELECT ${entry.did}, ${entry.door}, ${reason}, ${payload}::jsonb, ${at} FROM park_charged
      RETURNING id)
    SELECT ${entry.restricted ? sql`NULL AS door_slot_allowed` : slotColumns(DOOR_SLOT)}, ${slotColumns(PARK_SLOT)},
      (SELECT row_to_json(written) FROM written) AS written, (SELECT id FROM parked) AS parked_id, ${needs} AS needs_met`,
  );
  const row = rowsOf<Record<string, unknown>>(result)[0]!;
  if (row.needs_met !== true && write.needs) throw write.needs.refusal();
  if (row.written) return write.read(row.written as Record<string, unknown>);
  // The door's window allowed the write (so nothing was parked), yet nothing was written: its store is full.
  if (!entry.restricted && row[`${DOOR_SLOT}_allowed`] === true) throw await cityFull(db, storeCharge);
  const parked = slotOf(row, PARK_SLOT, parkedWindow, entry.now)!;
  requireTaken(parked, parkedWindow, "parked_writes");
  if (row.parked_id === null || row.parked_id === undefined) throw await cityFull(db, parkCharge);
  return { parked: true, quarantine_id: Number(row.parked_id), reason };
}

export function isParked(value: unknown): value is Parked {
  return typeof value === "object" && value !== null && (value as Parked).parked === true;
}

/** The citizen's parked writes, newest first, one keyset page (`before` an id) at a time. */
export async function listQuarantine(db: Database, did: string, options: { before?: number; limit: number }) {
  const rows = await db
    .select()
    .from(quarantine)
    .where(options.before ? and(eq(quarantine.did, did), lt(quarantine.id, options.before)) : eq(quarantine.did, did))
    .orderBy(desc(quarantine.id))
    .limit(options.limit + 1);
  const parked = rows
    .slice(0, options.limit)
    .map((r) => ({ id: r.id, door: r.door, reason: r.reason, payload: r.payload, parked_at: r.parkedAt.toISOString(), sealed: false as const }));
  const last = parked[parked.length - 1];
  return { parked, nextBefore: rows.length > options.limit && last ? last.id : null };
}
