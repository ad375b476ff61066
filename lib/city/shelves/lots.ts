import { and, eq, isNull, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { lotLocks } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { LIMITS } from "@/lib/city/protocols";
import { requireSlotIn, slotColumns, slotCtes } from "@/lib/city/bounds";

/**
 * The plat's lots: a fixed, published set of 64, named lot-01 to lot-64. A lot may be locked (held)
 * by one citizen at a time and released; it is never sold, and a held lot is not occupied.
 */
export const LOT_COUNT = 64;
export const LOTS: readonly string[] = Array.from({ length: LOT_COUNT }, (_, i) => `lot-${String(i + 1).padStart(2, "0")}`);
const KNOWN = new Set(LOTS);

/** The lot door: its name is also the rate window's scope. */
export const LOT_DOOR = "lock-lot";

export const LOT_ACTIONS = ["lock", "release"] as const;
export type LotAction = (typeof LOT_ACTIONS)[number];

export interface LotState {
  lot: string;
  held: boolean;
  holder: string | null;
  heldSince: Date | null;
}

/** Every lot of the plat in order, with its live holder if any: one query. */
export async function listLots(db: Database): Promise<LotState[]> {
  const live = await db.select({ lot: lotLocks.lot, did: lotLocks.did, lockedAt: lotLocks.lockedAt }).from(lotLocks).where(isNull(lotLocks.releasedAt));
  const byLot = new Map(live.map((r) => [r.lot, r]));
  return LOTS.map((lot) => {
    const hold = byLot.get(lot);
    return { lot, held: hold !== undefined, holder: hold?.did ?? null, heldSince: hold?.lockedAt ?? null };
  });
}

/**
 * Locks or releases a lot for a citizen. Every lock takes a slot of the hourly window (lots cannot
 * park: over it, 429); a release takes none, so releasing one's own lot is always possible.
 */
export async function actOnLot(db: Database, entry: { did: string; lot: string; action: LotAction; now: Date }): Promise<LotState> {
  const { did, lot, action, now } = entry;
  if (!KNOWN.has(lot)) throw new CityError("not_found", `There is no lot ${lot}: the plat's lots are lot-01 to lot-${LOT_COUNT}.`);
  return action === "lock" ? lock(db, did, lot, now) : release(db, did, lot, now);
}

/**
 * One statement: the hourly window is taken and, when it allows, the hold inserted; the partial
 * unique index lets one live holder in (ON CONFLICT waits for a rival's insert to commit or roll
 * back), so a second locker gets a clean 409. A full window is a 429, checked first.
 */
async function lock(db: Database, did: string, lot: string, now: Date): Promise<LotState> {
  const window = { scope: LOT_DOOR, subject: did, limit: LIMITS.perHour.lotLocks, windowSeconds: 3600 };
  const result = await db.execute(sql`
    WITH ${slotCtes(window, now)},
    held AS (
      INSERT INTO ${lotLocks} (lot, did, locked_at) SELECT ${lot}, ${did}, ${now.toISOString()}::timestamptz FROM slot WHERE slot.allowed
      ON CONFLICT (lot) WHERE released_at IS NULL DO NOTHING RETURNING locked_at)
    SELECT ${slotColumns("slot")}, (SELECT locked_at FROM held) AS locked_at,
      (SELECT did FROM ${lotLocks} WHERE lot = ${lot} AND released_at IS NULL) AS holder`);
  const row = rowsOf<Record<string, unknown>>(result)[0]!;
  requireSlotIn(row, window, now, "lot-locks");
  if (!row.locked_at) {
    const holder = row.holder as string | null;
    throw new CityError("conflict", holder === did ? `You already hold ${lot}.` : `${lot} is held by another citizen; one holder per lot.`);
  }
  return { lot, held: true, holder: did, heldSince: new Date(row.locked_at as string) };
}

async function release(db: Database, did: string, lot: string, now: Date): Promise<LotState> {
  const [row] = await db
    .update(lotLocks)
    .set({ releasedAt: now })
    .where(and(eq(lotLocks.lot, lot), eq(lotLocks.did, did), isNull(lotLocks.releasedAt)))
    .returning({ id: lotLocks.id });
  if (!row) throw new CityError("conflict", `You do not hold ${lot}; only its holder can release it.`);
  return { lot, held: false, holder: null, heldSince: null };
}
