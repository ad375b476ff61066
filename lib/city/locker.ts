import { and, asc, eq, lte, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { cityCounters, lockerBags } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { LIMITS } from "./protocols";
import { requireSlot } from "./rate";
import { guardShelfContent } from "./shelf-guard";
import { holdLock } from "./locks";

const L = LIMITS.locker;

/** Locker writes cannot park: a flood beyond this many per hour per citizen is refused with 429. */
export const LOCKER_WRITES_PER_HOUR = 240;

/** A bag name: 1 to 64 of [A-Za-z0-9._-]; "." and ".." are path segments and could never be read. */
export const BAG_NAME = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,64}$/;

/** The city_counters row holding the bytes of every bag in the city. */
export const LOCKER_BYTES_COUNTER = "locker_bytes";

export interface BagMeta {
  bag: string;
  bytes: number;
  updatedAt: Date;
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * Keeps (or overwrites) a bag. Per-citizen limits are checked under a lock on the citizen; the
 * city-wide bound is held by one guarded UPDATE of the city's counter, whose row lock serialises
 * writers on every instance, so parallel writes can never pass it. Nobody is ever evicted.
 */
export async function keepBag(
  db: Database,
  entry: { did: string; bag: string; content: string; now: Date; cityBytes: number },
): Promise<BagMeta> {
  const { did, bag, content, now } = entry;
  const bytes = utf8Bytes(content);
  if (bytes > L.bytesPerBag) {
    throw new CityError("payload_too_large", `A bag holds at most ${L.bytesPerBag} bytes of UTF-8 content; this one has ${bytes}. Nothing was stored.`, {
      limit: { name: "bag_bytes", limit: L.bytesPerBag },
    });
  }
  await requireSlot(db, { scope: "locker", subject: did, limit: LOCKER_WRITES_PER_HOUR, windowSeconds: 3600 }, now, "locker_writes");
  await guardShelfContent(db, { did, door: "keep-locker", texts: [bag, content], now });

  await holdLock(db, `locker:${did}`);
  const held = await db.select({ bag: lockerBags.bag, bytes: lockerBags.bytes }).from(lockerBags).where(eq(lockerBags.did, did));
  const previous = held.find((row) => row.bag === bag)?.bytes;
  if (previous === undefined && held.length >= L.bagsPerCitizen) {
    throw new CityError("limit_reached", `Your locker holds at most ${L.bagsPerCitizen} bags and all are in use; overwrite one instead. Nothing was stored or evicted.`, {
      limit: { name: "bags", limit: L.bagsPerCitizen, remaining: 0 },
    });
  }
  const used = held.reduce((sum, row) => sum + row.bytes, 0);
  const total = used - (previous ?? 0) + bytes;
  if (total > L.bytesPerCitizen) {
    throw new CityError(
      "limit_reached",
      `Your bags may hold at most ${L.bytesPerCitizen} bytes together; this write would make ${total}. Nothing was stored or evicted.`,
      { limit: { name: "citizen_bytes", limit: L.bytesPerCitizen, remaining: Math.max(0, L.bytesPerCitizen - used + (previous ?? 0)) } },
    );
  }

  await moveCityBytes(db, bytes - (previous ?? 0), entry.cityBytes);
  await db
    .insert(lockerBags)
    .values({ did, bag, content, bytes, updatedAt: now })
    .onConflictDoUpdate({ target: [lockerBags.did, lockerBags.bag], set: { content, bytes, updatedAt: now } });
  return { bag, bytes, updatedAt: now };
}

/** One guarded UPDATE: growth passes only while the city's total stays within the bound; shrinking always passes. */
async function moveCityBytes(db: Database, delta: number, bound: number): Promise<void> {
  if (delta === 0) return;
  const named = eq(cityCounters.name, LOCKER_BYTES_COUNTER);
  const moved = await db
    .update(cityCounters)
    .set({ value: sql`${cityCounters.value} + ${delta}` })
    .where(delta > 0 ? and(named, lte(sql`${cityCounters.value} + ${delta}`, bound)) : named)
    .returning({ name: cityCounters.name });
  if (moved.length === 0 && delta > 0) {
    throw new CityError("city_full", `The city is full: its lockers hold at most ${bound} bytes together. Nothing was stored and nobody was evicted.`, {
      limit: { name: "city_bytes", limit: bound },
    });
  }
}

/** The caller's bags (names and sizes, never contents), by name, in one query. */
export async function listBags(db: Database, did: string): Promise<{ bags: BagMeta[]; usedBytes: number }> {
  const bags = await db
    .select({ bag: lockerBags.bag, bytes: lockerBags.bytes, updatedAt: lockerBags.updatedAt })
    .from(lockerBags)
    .where(eq(lockerBags.did, did))
    .orderBy(asc(lockerBags.bag));
  return { bags, usedBytes: bags.reduce((sum, row) => sum + row.bytes, 0) };
}

/** One of the caller's bags with its content; 404 when the caller has no bag of that name. */
export async function readBag(db: Database, did: string, bag: string): Promise<BagMeta & { content: string }> {
  const [row] = await db
    .select({ bag: lockerBags.bag, content: lockerBags.content, bytes: lockerBags.bytes, updatedAt: lockerBags.updatedAt })
    .from(lockerBags)
    .where(and(eq(lockerBags.did, did), eq(lockerBags.bag, bag)));
  if (!row) throw new CityError("not_found", `Your locker has no bag named ${bag}.`);
  return row;
}
