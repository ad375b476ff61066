import { and, desc, eq, lt } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, quarantine } from "@/db/schema";
import { takeSlot } from "./rate";
import { holdLock } from "./locks";

export interface Parked {
  parked: true;
  quarantine_id: number;
  reason: string;
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
 * instead of being stored or raced.
 */
export async function writeOrPark<T>(
  db: Database,
  entry: { did: string; restricted: boolean; door: string; perHour: number; payload: Record<string, unknown>; now: Date },
  write: () => Promise<T>,
): Promise<T | Parked> {
  // Read the tier inside the transaction, under the lock a restriction takes, so a write racing
  // the refusal that restricts its author cannot slip through.
  await holdLock(db, `tier:${entry.did}`, "shared");
  const [author] = await db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, entry.did));
  if (entry.restricted || author?.tier === "restricted") {
    return park(db, { ...entry, reason: "restricted: every write on this door is parked until an appeal is granted" });
  }
  const slot = await takeSlot(db, { scope: entry.door, subject: entry.did, limit: entry.perHour, windowSeconds: 3600 }, entry.now);
  if (!slot.allowed) {
    return park(db, { ...entry, reason: `flood: more than ${entry.perHour} writes per hour on ${entry.door}; parked, not raced` });
  }
  return write();
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
