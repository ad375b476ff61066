import { and, count, eq, gt, max } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, contentRefusals, tierEvents } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { LIMITS } from "@/lib/city/protocols";

/**
 * The citizen's tier lock is its row lock (the lock of its whole lifecycle, which export also
 * takes), held until the transaction ends. Every tier change takes it exclusive; a write that must
 * not race a restriction takes it too (shared when it never changes a tier, exclusive when it
 * might: a shared holder asking for exclusive would deadlock its twin). A citizen's write door
 * already holds it from its caller look-up (lib/doors/pipeline/stages/caller.ts), so this costs no wait there.
 */
export async function holdTierLock(db: Database, did: string, mode: "exclusive" | "shared" = "exclusive"): Promise<void> {
  await db
    .select({ did: citizens.did })
    .from(citizens)
    .where(eq(citizens.did, did))
    .for(mode === "shared" ? "share" : "no key update");
}

/** The citizen's tier as the transaction sees it, under its tier lock. */
export async function currentTier(db: Database, did: string): Promise<string | null> {
  const [row] = await db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, did));
  return row?.tier ?? null;
}

export function restrictedRefusal(): CityError {
  return new CityError(
    "forbidden",
    `This door cannot park writes and the caller is restricted (published trigger: ${RESTRICTION_TRIGGER}). Appeal at POST /api/appeal.`,
  );
}

export const RESTRICTION_TRIGGER = `${LIMITS.restriction.refusals} fail-closed content refusals within ${LIMITS.restriction.windowSeconds} seconds on the citizen's own private shelves`;

/**
 * Records a fail-closed refusal and applies the published trigger: the third refusal within the
 * window restricts the citizen, exactly once even when refusals arrive in parallel (a lock on
 * the citizen serialises them). Nothing is deleted; the change is a tier event of its own.
 */
export async function recordRefusal(db: Database, entry: { did: string; door: string; rule: string; now: Date }): Promise<{ restricted: boolean }> {
  await holdTierLock(db, entry.did);
  await db.insert(contentRefusals).values({ did: entry.did, door: entry.door, rule: entry.rule, refusedAt: entry.now });
  // A granted appeal starts the count afresh: refusals before the latest restore do not count again.
  const [restored] = await db
    .select({ at: max(tierEvents.at) })
    .from(tierEvents)
    .where(and(eq(tierEvents.did, entry.did), eq(tierEvents.event, "restore")));
  const windowStart = new Date(entry.now.getTime() - LIMITS.restriction.windowSeconds * 1000);
  const since = restored?.at && new Date(restored.at) > windowStart ? new Date(restored.at) : windowStart;
  const [window] = await db
    .select({ n: count() })
    .from(contentRefusals)
    .where(and(eq(contentRefusals.did, entry.did), gt(contentRefusals.refusedAt, since)));
  const [citizen] = await db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, entry.did)).for("no key update");
  if (!citizen) return { restricted: false };
  if (citizen.tier === "restricted") return { restricted: true };
  if ((window?.n ?? 0) < LIMITS.restriction.refusals) return { restricted: false };
  await db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, entry.did));
  await db
    .insert(tierEvents)
    .values({ did: entry.did, event: "restrict", fromTier: citizen.tier, toTier: "restricted", reason: RESTRICTION_TRIGGER, at: entry.now });
  return { restricted: true };
}
