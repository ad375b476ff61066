import { and, asc, eq, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { cityCounters, lockerBags } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { LIMITS } from "@/lib/city/protocols";
import { requireSlot, requireSlotIn, slotColumns, slotCtes } from "@/lib/city/bounds";
import { guardShelfContent, isClean } from "./shelf-guard";

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
 * Keeps (or overwrites) a bag. Per-citizen limits are checked under the citizen's row lock; the
 * city-wide bound is held by one guarded UPDATE of the city's counter, whose row lock serialises
 * writers on every instance, so parallel writes can never pass it. Nobody is ever evicted.
 */
export async function keepBag(db: Database, entry: { did: string; bag: string; content: string; now: Date; cityBytes: number }): Promise<BagMeta> {
  const { did, bag, content, now } = entry;
  const bytes = utf8Bytes(content);
  if (bytes > L.bytesPerBag) {
    throw new CityError("payload_too_large", `A bag holds at most ${L.bytesPerBag} bytes of UTF-8 content; this one has ${bytes}. Nothing was stored.`, {
      limit: { name: "bag_bytes", limit: L.bytesPerBag },
    });
  }
  const window = { scope: "locker", subject: did, limit: LOCKER_WRITES_PER_HOUR, windowSeconds: 3600 };
  if (!isClean(bag, content)) {
    // The refusal path, in the order it always had: the attempt is counted, then the refusal.
    await requireSlot(db, window, now, "locker_writes");
    await guardShelfContent(db, { did, door: "keep-locker", texts: [bag, content], now });
  }
  // One statement: the window is taken; the citizen's bags are read (the door holds the citizen's
  // row exclusively from its caller look-up, an earlier statement of this transaction, so they are
  // what the citizen's last write committed); when every per-citizen limit holds, the city's
  // counter moves by one guarded UPDATE (its row lock serialises writers on every instance) and
  // the bag is kept only if it moved. Any refusal below rolls the whole statement back.
  const at = sql`${now.toISOString()}::timestamptz`;
  const result = await db.execute(sql`
    WITH ${slotCtes(window, now)},
    held AS (
      SELECT count(*) FILTER (WHERE bag <> ${bag})::int AS others,
        coalesce(sum(bytes) FILTER (WHERE bag <> ${bag}), 0)::int AS other_bytes,
        max(bytes) FILTER (WHERE bag = ${bag}) AS previous
      FROM ${lockerBags} WHERE did = ${did}),
    fits AS (
      SELECT ${bytes}::int - coalesce(held.previous, 0) AS delta FROM slot, held
      WHERE slot.allowed AND (held.previous IS NOT NULL OR held.others < ${L.bagsPerCitizen}::int)
        AND held.other_bytes + ${bytes}::int <= ${L.bytesPerCitizen}::int),
    moved AS (
      UPDATE ${cityCounters} AS c SET value = c.value + fits.delta FROM fits
      WHERE c.name = ${LOCKER_BYTES_COUNTER} AND fits.delta <> 0 AND (fits.delta < 0 OR c.value + fits.delta <= ${entry.cityBytes})
      RETURNING c.name),
    kept AS (
      INSERT INTO ${lockerBags} (did, bag, content, bytes, updated_at)
      SELECT ${did}, ${bag}, ${content}, ${bytes}::int, ${at} FROM fits WHERE fits.delta = 0 OR EXISTS (SELECT 1 FROM moved)
      ON CONFLICT (did, bag) DO UPDATE SET content = excluded.content, bytes = excluded.bytes, updated_at = excluded.updated_at
      RETURNING 1)
    SELECT ${slotColumns("slot")}, held.others, held.other_bytes, held.previous, (SELECT count(*)::int FROM kept) AS kept FROM held`);
  const row = rowsOf<Record<string, unknown>>(result)[0]!;
  requireSlotIn(row, window, now, "locker_writes");
  const previous = row.previous === null ? undefined : Number(row.previous);
  const others = Number(row.others);
  const otherBytes = Number(row.other_bytes);
  if (previous === undefined && others >= L.bagsPerCitizen) {
    throw new CityError(
      "limit_reached",
      `Your locker holds at most ${L.bagsPerCitizen} bags and all are in use; overwrite one instead. Nothing was stored or evicted.`,
      {
        limit: { name: "bags", limit: L.bagsPerCitizen, remaining: 0 },
      },
    );
  }
  const total = otherBytes + bytes;
  if (total > L.bytesPerCitizen) {
    throw new CityError(
      "limit_reached",
      `Your bags may hold at most ${L.bytesPerCitizen} bytes together; this write would make ${total}. Nothing was stored or evicted.`,
      { limit: { name: "citizen_bytes", limit: L.bytesPerCitizen, remaining: Math.max(0, L.bytesPerCitizen - otherBytes) } },
    );
  }
  if (Number(row.kept) === 0) {
    throw new CityError(
      "city_full",
      `The city is full: its lockers hold at most ${entry.cityBytes} bytes together. Nothing was stored and nobody was evicted.`,
      {
        limit: { name: "city_bytes", limit: entry.cityBytes },
      },
    );
  }
  return { bag, bytes, updatedAt: now };
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
