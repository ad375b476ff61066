import { and, count, eq, gt, lte, min, sql } from "drizzle-orm";
import { type Database, rowsOf } from "@/db/client";
import { rateEvents } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { holdLock } from "./locks";

export interface Window {
  scope: string;
  subject: string;
  limit: number;
  windowSeconds: number;
}

export interface Slot {
  allowed: boolean;
  /** Attempts counted in the window, this one included when allowed. */
  used: number;
  remaining: number;
  /** Seconds until the oldest counted attempt leaves the window (when refused). */
  retryAfterSeconds: number;
}

/** Expired attempts of any subject removed per counted attempt: each adds one row, so the backlog shrinks. */
export const RATE_SWEEP_BATCH = 32;

/**
 * Counts one attempt against a rate window, inside the caller's transaction. An advisory lock on
 * (scope, subject) serialises concurrent takers of the same window, on every instance, so N
 * parallel attempts against a limit K let exactly K through. Each attempt also sweeps a bounded
 * batch of expired rows of every scope and subject (attacker-chosen origins and addresses are
 * never counted again, so nothing else would remove theirs).
 */
export async function takeSlot(db: Database, window: Window, now: Date): Promise<Slot> {
  const { scope, subject, limit, windowSeconds } = window;
  const since = new Date(now.getTime() - windowSeconds * 1000);
  await holdLock(db, `rate:${scope}:${subject}`);
  await sweepRateEvents(db, now, RATE_SWEEP_BATCH, { scope, subject, since });
  const [row] = await db
    .select({ used: count(), oldest: min(rateEvents.at) })
    .from(rateEvents)
    .where(and(eq(rateEvents.scope, scope), eq(rateEvents.subject, subject), gt(rateEvents.at, since)));
  const used = row?.used ?? 0;
  if (used >= limit) {
    const oldest = row?.oldest ? new Date(row.oldest) : now;
    const retryAfterSeconds = Math.max(1, Math.ceil((oldest.getTime() + windowSeconds * 1000 - now.getTime()) / 1000));
    return { allowed: false, used, remaining: 0, retryAfterSeconds };
  }
  await db.insert(rateEvents).values({ scope, subject, at: now, expiresAt: new Date(now.getTime() + windowSeconds * 1000) });
  return { allowed: true, used: used + 1, remaining: limit - used - 1, retryAfterSeconds: 0 };
}

/**
 * Deletes up to one batch of attempts past their window, whoever they counted against, and (with
 * `own`) every attempt of the window being counted that has left it, in one statement. Expired
 * rows count for nobody, so removing them changes no window; SKIP LOCKED keeps parallel sweeps
 * from waiting on each other. Returns how many went.
 */
export async function sweepRateEvents(db: Database, now: Date, batch = RATE_SWEEP_BATCH, own?: { scope: string; subject: string; since: Date }): Promise<number> {
  const ownExpired = own ? sql`(scope = ${own.scope} AND subject = ${own.subject} AND at <= ${own.since.toISOString()}::timestamptz) OR ` : sql``;
  const result = await db.execute(sql`
    DELETE FROM rate_events WHERE ${ownExpired}id IN (
      SELECT id FROM rate_events WHERE expires_at <= ${now.toISOString()}::timestamptz
      ORDER BY expires_at LIMIT ${batch} FOR UPDATE SKIP LOCKED)
    RETURNING id`);
  return rowsOf(result).length;
}

/** For doors that cannot park: take a slot or refuse with 429, Retry-After and the RateLimit headers. */
export async function requireSlot(db: Database, window: Window, now: Date, name: string): Promise<Slot> {
  const slot = await takeSlot(db, window, now);
  if (!slot.allowed) throw slotRefusal(window, name, slot.retryAfterSeconds);
  return slot;
}

/** The 429 of a full window: Retry-After and the RateLimit headers come from its options. */
export function slotRefusal(window: Pick<Window, "limit" | "windowSeconds">, name: string, retryAfterSeconds: number): CityError {
  return new CityError("rate_limited", `At most ${window.limit} ${name} per ${window.windowSeconds} seconds; try again in ${retryAfterSeconds} s.`, {
    retryAfterSeconds,
    limit: { name, limit: window.limit, window_seconds: window.windowSeconds, remaining: 0 },
  });
}
