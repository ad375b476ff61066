import { count, eq, min, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { seals } from "@/db/schema";
import { requireSlotIn, slotColumns, slotCtes, type Charge, chargeSql, cityFull, newcomerSql, rowBytes, citizenShare } from "@/lib/city/bounds";

export const SEALS_PER_HOUR = 60;

/**
 * Seals a sha256 of the caller's memory. Sealing the same digest again answers the first seal.
 * One statement: the hourly window is taken and, when it allows, the seal stored; a full window
 * is a 429 that rolls the statement back with the door's transaction.
 */
export async function sealMemory(db: Database, did: string, sha256: string, now: Date): Promise<{ sha256: string; createdAt: Date; created: boolean }> {
  const window = { scope: "seals", subject: did, limit: SEALS_PER_HOUR, windowSeconds: 3600 };
  // The city-wide store bound is charged only for a new seal (the citizen's row lock, held since
  // its caller look-up, orders its own seals; lib/city/bounds/store-bounds.ts), and the seal stored only from the charge.
  const charge: Charge = { store: "seals", bytes: rowBytes(sha256), newcomer: newcomerSql(did, now), now, subject: citizenShare(did) };
  const mine = sql`EXISTS (SELECT 1 FROM ${seals} WHERE sha256 = ${sha256} AND did = ${did})`;
  const result = await db.execute(sql`
    WITH ${slotCtes(window, now)},
    charged AS (${chargeSql(charge, sql`FROM slot WHERE slot.allowed AND NOT ${mine}`)}),
    sealed AS (
      INSERT INTO ${seals} (sha256, did, created_at) SELECT ${sha256}, ${did}, ${now.toISOString()}::timestamptz FROM charged
      ON CONFLICT DO NOTHING RETURNING created_at)
    SELECT ${slotColumns("slot")}, (SELECT created_at FROM sealed) AS created_at, (SELECT min(created_at) FROM ${seals} WHERE sha256 = ${sha256}) AS first,
      ${mine} AS mine`);
  const row = rowsOf<Record<string, unknown>>(result)[0]!;
  requireSlotIn(row, window, now, "seals");
  if (!row.created_at && row.mine !== true) throw await cityFull(db, charge);
  if (row.created_at) return { sha256, createdAt: new Date(row.created_at as string), created: true };
  // A seal committed while this statement waited on it is not in the statement's snapshot: read it now.
  const first =
    row.first ??
    (
      await db
        .select({ at: min(seals.createdAt) })
        .from(seals)
        .where(eq(seals.sha256, sha256))
    )[0]?.at;
  return { sha256, createdAt: new Date(first as string), created: false };
}

/** Whether any citizen sealed this digest, and when it was first sealed. Who sealed it is not told. */
export async function findSeal(db: Database, sha256: string): Promise<{ sealed: boolean; firstSealedAt: Date | null; seals: number }> {
  const [row] = await db
    .select({ first: min(seals.createdAt), n: count() })
    .from(seals)
    .where(eq(seals.sha256, sha256));
  const n = row?.n ?? 0;
  return { sealed: n > 0, firstSealedAt: row?.first ? new Date(row.first) : null, seals: n };
}
