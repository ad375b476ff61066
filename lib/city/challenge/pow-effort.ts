import { type Bucketed, bucketOf, countsOf, RATE_BUCKETS, type Window } from "@/lib/city/bounds";

/*
 * The gate's suggested effort (CITY-POW/1, docs/pow.md), derived from what the admissions ceiling's
 * stripes already count: no row of its own, nothing any caller updates. The ceiling counts its
 * admissions per step (a twelfth of its hour: rate-buckets.ts); summed over the stripes, the steps
 * say how full the window stood at each of the last RATE_BUCKETS + 1 steps.
 *
 * - Presentations without a bid may fill the window only up to its open share (`open`, below);
 *   past it they are refused, and only bids (a solution of at least the suggested effort) and
 *   presentations signed with a key go on, up to what the window lets them.
 * - Below the open share nobody is refused for want of work: the suggested effort is 0.
 * - At or past it the effort is the larger of a price that climbs with what is left (POW_BASE_EFFORT
 *   at the open share, POW_MAX_EFFORT when the last slot is left) and a level that remembers
 *   pressure, Tor's rule (proposal 327): it rises by POW_EFFORT_RISE for each step in which
 *   admissions still came while the window stood at or past its open share (demand beyond what is
 *   open to all: bids, or the step that filled it), and loses a third (rounded down) in each step
 *   in which none did. So bidders who keep coming pay more each step, a flood without bids (all
 *   refused) does not raise the price honest bidders pay, and the price falls back when calm.
 * - Never more than POW_MAX_EFFORT: what an honest client pays at most is bounded and published.
 */

/** Leading zero bits asked when the open share is just reached. */
export const POW_BASE_EFFORT = 12;
/** The most the gate ever suggests: what an honest client pays at most (docs/pow.md gives the seconds). */
export const POW_MAX_EFFORT = 22;
/** Bits the remembered level rises by in each step the window stands at or past its open share. */
export const POW_EFFORT_RISE = 2;
/**
 * Of what anonymous presentations may take of the ceiling, the part those without a bid may fill
 * (numerator / denominator); the rest is served to bids only.
 */
export const POW_OPEN_SHARE = { numerator: 3, denominator: 4 } as const;

/** Where the window stands for bids: the open share and what bids may fill up to. */
export interface PowShares {
  /** Those without a bid are refused once the window counts this many. */
  open: number;
  /** Bids are refused once the window counts this many. */
  bids: number;
}

/** The shares of a ceiling whose anonymous presentations may take `anonymous` of its limit. */
export function powShares(anonymous: number): PowShares {
  // At least one slot is open to all of a ceiling that admits any (a ceiling of 1 has no bids' part).
  const open = Math.floor((anonymous * POW_OPEN_SHARE.numerator) / POW_OPEN_SHARE.denominator);
  return { open: anonymous > 0 ? Math.max(1, open) : 0, bids: anonymous };
}

/** A stored stripe, as the stripes' JSON gives it (rate-stripes.ts stripesJson). */
interface StoredStripe {
  bucket: number | string;
  bucket_ms: number | string;
  counts: number[] | string;
}

/**
 * The window's admissions per step, summed over its stripes, newest (the current step) first:
 * RATE_BUCKETS + 1 numbers. A stripe of another step length (the window's length was changed) is skipped.
 */
export function stepTotals(json: unknown, window: Window, now: Date): number[] {
  const stripes = (typeof json === "string" ? JSON.parse(json) : json) as StoredStripe[] | null;
  const totals: number[] = new Array<number>(RATE_BUCKETS + 1).fill(0);
  const current = bucketOf(window, now);
  for (const stripe of stripes ?? []) {
    if (Number(stripe.bucket_ms) !== Math.ceil((window.windowSeconds * 1000) / RATE_BUCKETS)) continue;
    const state: Bucketed = { bucket: Number(stripe.bucket), counts: countsOf(stripe.counts) };
    const shift = Math.max(0, current - state.bucket);
    state.counts.forEach((count, i) => {
      if (i + shift <= RATE_BUCKETS) totals[i + shift]! += count;
    });
  }
  return totals;
}

/**
 * The remembered level after the stored steps, oldest first: +POW_EFFORT_RISE in a step that
 * admitted while its window stood at or past the open share, two thirds (rounded down) in any
 * other. A step's window is counted from the oldest stored step on: what has left the window is
 * not known, so the level is never more than the steps still counted show (at most 13 steps back).
 */
export function pressureLevel(totals: readonly number[], shares: PowShares): number {
  let level = 0;
  let window = 0;
  for (let step = totals.length - 1; step >= 0; step--) {
    window += totals[step]!;
    const contended = totals[step]! > 0 && window >= shares.open;
    level = contended ? Math.min(POW_MAX_EFFORT, level + POW_EFFORT_RISE) : Math.floor((level * 2) / 3);
  }
  return level;
}

/** The suggested effort for a window whose steps count `totals` (see the rule above). */
export function suggestedEffort(totals: readonly number[], shares: PowShares): number {
  const used = totals.reduce((a, b) => a + b, 0);
  if (shares.open <= 0 || used < shares.open) return 0;
  const room = Math.max(1, shares.bids - shares.open);
  const price = POW_BASE_EFFORT + Math.floor((Math.min(used - shares.open, room) * (POW_MAX_EFFORT - POW_BASE_EFFORT)) / room);
  return Math.min(POW_MAX_EFFORT, Math.max(price, pressureLevel(totals, shares)));
}
