import { and, desc, eq, lt } from "drizzle-orm";
import type { Database } from "@/db/client";
import { quarantine } from "@/db/schema";
import { requireSlot, takeSlot } from "./rate";
import { currentTier, holdTierLock } from "./restriction";

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

export async function park(db: Database, entry: { did: string; door: string; reason: string; payload: Record<string, unknown>; now: Date }): Promise<Parked> {
  const [row] = await db
    .insert(quarantine)
    .values({ did: entry.did, door: entry.door, reason: entry.reason, payload: entry.payload, parkedAt: entry.now })
    .returning({ id: quarantine.id });
  return { parked: true, quarantine_id: row!.id, reason: entry.reason };
}

/**
 * A write on a door that can park: while the citizen is restricted, or once its hourly window is
 * full, the write is parked in quarantine (visible to its author, never sealed, never dropped)
 * instead of being stored or raced; past the published parked cap it is refused 429, stored nowhere.
 */
export async function writeOrPark<T>(
  db: Database,
  entry: { did: string; restricted: boolean; door: string; perHour: number; payload: Record<string, unknown>; now: Date },
  write: () => Promise<T>,
): Promise<T | Parked> {
  // Read the tier inside the transaction, under the lock a restriction takes, so a write racing
  // the refusal that restricts its author cannot slip through.
  await holdTierLock(db, entry.did, "shared");
  const restricted = entry.restricted || (await currentTier(db, entry.did)) === "restricted";
  if (!restricted) {
    const slot = await takeSlot(db, { scope: entry.door, subject: entry.did, limit: entry.perHour, windowSeconds: 3600 }, entry.now);
    if (slot.allowed) return write();
  }
  const parkedWindow = { scope: `parked:${entry.door}`, subject: entry.did, limit: parkedCap(entry.perHour), windowSeconds: PARKED_WINDOW_SECONDS };
  await requireSlot(db, parkedWindow, entry.now, "parked_writes");
  const reason = restricted
    ? "restricted: every write on this door is parked until an appeal is granted"
    : `flood: more than ${entry.perHour} writes per hour on ${entry.door}; parked, not raced`;
  return park(db, { ...entry, reason });
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
  const parked = rows.slice(0, options.limit).map((r) => ({ id: r.id, door: r.door, reason: r.reason, payload: r.payload, parked_at: r.parkedAt.toISOString(), sealed: false as const }));
  const last = parked[parked.length - 1];
  return { parked, nextBefore: rows.length > options.limit && last ? last.id : null };
}
