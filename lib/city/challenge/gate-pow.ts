import { sql, type SQL } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { GATE_PREFIX_SHARE_PERCENT, GATE_RESERVE_PERCENT, type GateLimits, type Presentation } from "./gate-presentation";
import { shareOf } from "./gate-prefixes";
import { POW_EFFORT_HEADER, POW_PROTOCOL, solutionEffort } from "./pow";
import { POW_BASE_EFFORT, POW_MAX_EFFORT, type PowShares, powShares, stepTotals, suggestedEffort } from "./pow-effort";
import {
  bucketMs,
  bucketOf,
  cityWindow,
  NEWCOMER_SECONDS,
  STEP_CYCLE,
  stepPortion,
  stripesRoom,
  stripesRoomSql,
  type Window,
  withReach,
  withSteps,
} from "@/lib/city/bounds";

/*
 * CITY-POW/1 at the gate (docs/pow.md): what presentations without a bid may fill of the admissions
 * ceiling (the open share), the effort the gate suggests now (read from the ceiling's stripes, no
 * row of its own), and whether a presentation's pow_solution is a bid. The take itself (gate-flood.ts
 * admissionWindow) gives a bid more reach than a presentation without one, on the same stripes; a
 * keyless bid takes the bids' part in steps (steppedBidWindow): each step of the hour releases a
 * portion of it, so what a flood of bids takes in one step leaves the next its own (docs/pow.md).
 */

/** The admissions ceiling's window (null when off). */
export function ceilingWindow(limits: GateLimits): Window | null {
  return limits.admissionsPerHour > 0 ? cityWindow("gate-admissions", limits.admissionsPerHour, 3600) : null;
}

/** What presentations without a proven key may reach of the ceiling together (what the reserve leaves). */
export function anonymousReach(limits: GateLimits): number {
  const open = 1 - (limits.reservePercent ?? GATE_RESERVE_PERCENT) / 100;
  return Math.floor(limits.admissionsPerHour * Math.min(1, Math.max(0, open)));
}

/** The ceiling's shares for bids: the open share (those without a bid) and what bids may fill up to. */
export function gatePowShares(limits: GateLimits): PowShares {
  return powShares(anonymousReach(limits));
}

/**
 * The ceiling as a bid takes it (all but a settled citizen's signed one): up to what the reserve leaves, and past the open share only
 * what each step releases (rate-stripes.ts withSteps: stepPortion(bids - open) a step, counted on
 * the stripes in the statement that takes the slot). Null when the ceiling is off.
 */
export function steppedBidWindow(limits: GateLimits): Window | null {
  const window = ceilingWindow(limits);
  if (!window) return null;
  return withSteps(withReach(window, anonymousReach(limits)), gatePowShares(limits).open);
}

/** A bids' step's length in seconds (the admissions ceiling's hour cut in its buckets); 0 when the ceiling is off. */
export function bidStepSeconds(limits: GateLimits): number {
  const window = steppedBidWindow(limits);
  return window ? bucketMs(window) / 1000 : 0;
}

/** The bids one /24 or /48 may have served per step (gate-bids-prefix): its share of a step's portion, at least one. */
export function networkStepShare(limits: GateLimits): number {
  const shares = gatePowShares(limits);
  return shareOf(stepPortion(shares.bids - shares.open), limits.prefixSharePercent ?? GATE_PREFIX_SHARE_PERCENT);
}

/** The bids' step as GET /gate and /api/capabilities publish it (null when the ceiling is off). */
export interface BidStep {
  /** A step's length: the admissions ceiling's hour cut in RATE_BUCKETS. */
  seconds: number;
  /** Bid slots past the open share a step releases to keyless bids: (bids - open) / STEP_CYCLE, rounded down, at least one. */
  portion: number;
  /** Of them, what is left in this step (what keyless bids may still take past the open share now). */
  left: number;
  /** When the next step opens (ISO 8601). */
  next_at: string;
}

/** The bids' step now, from the ceiling's stripes (their JSON as read). */
export function bidStep(json: unknown, limits: GateLimits, now: Date): BidStep | null {
  const window = steppedBidWindow(limits);
  if (!window) return null;
  const shares = gatePowShares(limits);
  const ms = bucketMs(window);
  const open = stripesRoom(json, withReach(window, shares.open), now);
  return {
    seconds: ms / 1000,
    portion: stepPortion(shares.bids - shares.open),
    left: Math.max(0, stripesRoom(json, window, now) - open),
    next_at: new Date((bucketOf(window, now) + 1) * ms).toISOString(),
  };
}

/**
 * The most the step starting at `at` asks of a bid when keyless bids take its whole portion: the
 * suggested effort (pow-effort.ts) of the ceiling's steps as they stand then, that step counting its
 * portion. What a refusal told to wait for the next step suggests: a solution of it is a bid for
 * that whole step (unless keyed admissions fill more), never more than POW_MAX_EFFORT.
 */
export function stepEffort(json: unknown, limits: GateLimits, at: Date): number {
  const window = ceilingWindow(limits);
  if (!window) return 0;
  const shares = gatePowShares(limits);
  const steps = stepTotals(json, window, at);
  steps[0] = steps[0]! + stepPortion(shares.bids - shares.open);
  return suggestedEffort(steps, shares);
}

/** SQL (a SELECT of one row, column `stripes`): the ceiling's stripes as JSON, what the effort is read from. */
export function ceilingStripesSql(window: Window, now: Date): SQL {
  return sql`SELECT stripes FROM (${stripesRoomSql(window, now)}) ceiling_read`;
}

/**
 * What the ceiling's stripes (their JSON as read) say now: the admissions it counts and the effort
 * suggested, from one pass over its steps; both 0 when the ceiling is off.
 */
export function ceilingPressure(json: unknown, limits: GateLimits, now: Date): { counted: number; effort: number } {
  const window = ceilingWindow(limits);
  if (!window) return { counted: 0, effort: 0 };
  const steps = stepTotals(json, window, now);
  return { counted: steps.reduce((a, b) => a + b, 0), effort: suggestedEffort(steps, gatePowShares(limits)) };
}

/** The suggested effort from the ceiling's stripes (their JSON as read); 0 when the ceiling is off. */
export function effortFromStripes(json: unknown, limits: GateLimits, now: Date): number {
  return ceilingPressure(json, limits, now).effort;
}

/** Reads the ceiling's stripes now (one statement that writes nothing; null when the ceiling is off). */
export async function readCeilingStripes(db: Database, limits: GateLimits, now: Date): Promise<unknown> {
  const window = ceilingWindow(limits);
  if (!window) return null;
  const [row] = rowsOf<{ stripes: unknown }>(await db.execute(ceilingStripesSql(window, now)));
  return row?.stripes ?? null;
}

/** Reads the suggested effort now (one statement that writes nothing; none when the ceiling is off). */
export async function readSuggestedEffort(db: Database, limits: GateLimits, now: Date): Promise<number> {
  return effortFromStripes(await readCeilingStripes(db, limits, now), limits, now);
}

/**
 * Whether a presentation that may take the ceiling bids, and whether its bid is served in steps now.
 * A signature by a citizen's key (its sponsor) is a bid with no work; a pow_solution is one when its
 * effort (bound to the nonce, the name and the origin) is at least the effort suggested now. A
 * settled sponsor's is never stepped; any other bid is, once the open share is taken (a suggested
 * effort above 0). Known with no statement for a settled sponsor, and for a solution under
 * POW_BASE_EFFORT (the least ever asked), without a nonce or with the ceiling off (no bid); else the
 * stripes are read once.
 */
export async function bidOf(
  db: Database,
  p: Presentation,
  limits: GateLimits,
  now: Date,
  sponsor: { settled: boolean } | null,
): Promise<{ bid: boolean; stepped: boolean }> {
  if (sponsor?.settled) return { bid: true, stepped: false };
  // A newcomer's signature bids whatever is asked; a solution only at the effort asked now.
  const offered = sponsor ? Infinity : offeredEffort(p, limits);
  if (offered < POW_BASE_EFFORT) return { bid: false, stepped: false };
  const asked = await readSuggestedEffort(db, limits, now);
  const bid = offered >= asked;
  return { bid, stepped: bid && asked > 0 };
}

/** The effort of a presentation's pow_solution (bound to its nonce, name and origin); 0 without one, without a nonce, or with the ceiling off. */
function offeredEffort(p: Presentation, limits: GateLimits): number {
  if (p.pow_solution === undefined || p.nonce === undefined || !ceilingWindow(limits)) return 0;
  return solutionEffort({ nonce: p.nonce, name: p.name, origin: p.origin }, p.pow_solution);
}

/** Where the docs of the protocol are. */
export const POW_DOCS = "docs/pow.md";

/** The `pow` block GET /gate and /api/capabilities publish: the effort suggested now and the bids' step (bidStep). */
export function powBlock(effort: number, limits: GateLimits, step: BidStep | null = null) {
  const shares = gatePowShares(limits);
  const off = !ceilingWindow(limits);
  const portion = stepPortion(shares.bids - shares.open);
  return {
    protocol: POW_PROTOCOL,
    suggested_effort: effort,
    max_effort: POW_MAX_EFFORT as typeof POW_MAX_EFFORT,
    field: "pow_solution" as const,
    header: POW_EFFORT_HEADER,
    docs: POW_DOCS,
    step,
    note: off
      ? "The admissions ceiling is off here: no work is ever asked."
      : `Presentations without a bid may fill the hour's admissions ceiling up to its open share (${shares.open} of the ${shares.bids} all but settled citizens' signed presentations may take); ` +
        `past it a presentation is admitted only with pow_solution of at least suggested_effort leading zero bits (${POW_PROTOCOL}, bound to the nonce, name and origin), ` +
        `or signed with a key bound to a citizen (CITY-SIG/1). 0: nothing to pay. Never more than ${POW_MAX_EFFORT}. ` +
        `Bids are served in steps, but for a settled citizen's signature (admitted ${NEWCOMER_SECONDS} s ago or more: it reaches the reserve too): each step (step.seconds) releases ${portion} of the ${shares.bids - shares.open} bid slots past the open share ` +
        `(1/${STEP_CYCLE} of them, rounded down, at least one: an admission counts ${STEP_CYCLE} steps), whatever earlier steps took; step.left of them are left now, and the next step opens at step.next_at.`,
  };
}

/** The header carrying the suggested effort. */
export function powHeaders(effort: number): Record<string, string> {
  return { [POW_EFFORT_HEADER]: String(effort) };
}
