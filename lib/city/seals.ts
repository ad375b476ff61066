import { eq, min, count } from "drizzle-orm";
import type { Database } from "@/db/client";
import { seals } from "@/db/schema";
import { requireSlot } from "./rate";

export const SEALS_PER_HOUR = 60;

/** Seals a sha256 of the caller's memory. Sealing the same digest again answers the first seal. */
export async function sealMemory(db: Database, did: string, sha256: string, now: Date): Promise<{ sha256: string; createdAt: Date; created: boolean }> {
  await requireSlot(db, { scope: "seals", subject: did, limit: SEALS_PER_HOUR, windowSeconds: 3600 }, now, "seals");
  const inserted = await db.insert(seals).values({ sha256, did, createdAt: now }).onConflictDoNothing().returning({ createdAt: seals.createdAt });
  if (inserted[0]) return { sha256, createdAt: inserted[0].createdAt, created: true };
  const [first] = await db.select({ createdAt: seals.createdAt }).from(seals).where(eq(seals.sha256, sha256)).orderBy(seals.createdAt).limit(1);
  return { sha256, createdAt: first!.createdAt, created: false };
}

/** Whether any citizen sealed this digest, and when it was first sealed. Who sealed it is not told. */
export async function findSeal(db: Database, sha256: string): Promise<{ sealed: boolean; firstSealedAt: Date | null; seals: number }> {
  const [row] = await db.select({ first: min(seals.createdAt), n: count() }).from(seals).where(eq(seals.sha256, sha256));
  const n = row?.n ?? 0;
  return { sealed: n > 0, firstSealedAt: row?.first ? new Date(row.first) : null, seals: n };
}
