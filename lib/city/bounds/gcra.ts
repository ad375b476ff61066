import { type SQL, sql } from "drizzle-orm";

/*
 * GCRA (the generic cell rate algorithm) over one stored value per subject, its theoretical arrival
 * time (tat): each event moves the tat on by the emission interval (window / limit), from now when
 * the tat has passed; an event that would move it past now + window is refused. So a subject may
 * spend `limit` events at once (the burst), then one per emission interval: at most limit + t /
 * interval in any t seconds. A sliding, smooth bound in constant work: one value to read and write,
 * no array of timestamps. Used by the signed writes per key (request_keys.nonce_tat) and by the
 * gate's nonces per client address (gate_nonce_quota.tat).
 */

/** A rate as GCRA counts it: `limit` events per `windowSeconds`, at most `limit` of them at once. */
export interface GcraRate {
  limit: number;
  windowSeconds: number;
}

/** The emission interval: how far one event moves the tat on (ms). */
export function emissionMs(rate: GcraRate): number {
  return (rate.windowSeconds * 1000) / rate.limit;
}

/** SQL: the tat after one more event at `at`, from `tat` (null or past: from `at`). */
export function gcraNextSql(rate: GcraRate, tat: SQL, at: SQL): SQL {
  return sql`(greatest(coalesce(${tat}, ${at}), ${at}) + ${emissionMs(rate)} * interval '1 millisecond')`;
}

/** SQL: whether the event that moves the tat to `next` fits: next is at most `at` + the window. */
export function gcraFitsSql(rate: GcraRate, next: SQL, at: SQL): SQL {
  return sql`(${next} <= ${at} + ${rate.windowSeconds} * interval '1 second')`;
}

/** Whole seconds (at least 1) until an event refused at this tat would fit. */
export function gcraRetryAfterSeconds(rate: GcraRate, tat: Date | null, now: Date): number {
  const fitsAt = (tat?.getTime() ?? now.getTime()) + emissionMs(rate) - rate.windowSeconds * 1000;
  return Math.max(1, Math.ceil((fitsAt - now.getTime()) / 1000));
}

/** How the bound reads where it is published: sliding, its burst and its pace. */
export function gcraTerms(rate: GcraRate): string {
  const every = Math.round(emissionMs(rate) / 100) / 10;
  return `GCRA, sliding: a burst of ${rate.limit}, then one every ${every} s, so at most ${rate.limit} + t / ${every} in any t seconds`;
}
