import { type Database } from "@/db/client";
import {
  filtered,
  GATE_HOST_SHARE_PERCENT,
  GATE_PREFIX_SHARE_PERCENT,
  GATE_RESERVE_PERCENT,
  GATE_SUBJECTS_MAX,
  type GateCircumstances,
  type Presentation,
  type RetryAdvice,
  type Verdict,
  shareOf,
  sourceOf,
  anonymousReach,
  ceilingPressure,
  ceilingWindow,
  gatePowShares,
} from "@/lib/city/challenge";
import { type Chain, type ChainOutcome, takeChain, type Slot, type Window, withReach } from "@/lib/city/bounds";
import { normalKey } from "@/lib/city/directory";

/**
 * The gate's flood rule: the windows a presentation is counted in and the filtered verdict of one
 * that is full. Every presentation not proven as a resume is counted by its source (gate-prefixes.ts):
 * its address (`gate-address`: an IPv4 address or an IPv6 /64), then its /24 or /48 (`gate-prefix`).
 * One that can be a first admission (or a ward request) is counted too against its source's share
 * of the city's admissions ceiling (for IPv6 its /64's smaller share, `gate-admissions-host`, then
 * its /48's, `gate-admissions-prefix`), its origin, and then the ceiling itself, of which a
 * presentation without a proven key reaches only its allowance (the reserve keeps the rest).
 */

/** Scopes that count every presentation of a source (not only those that can admit). */
export const PRESENTATION_SCOPES = ["gate-prefix", "gate-address"] as const;

/** The presentations windows of a source: its address, then its /24 or /48. None where the address is unknown. */
export function sourceWindows(c: GateCircumstances): Window[] {
  // An unknown address is no bucket (one shared bucket would let a few looks lock every newcomer out).
  if (!c.ip) return [];
  const source = sourceOf(c.ip);
  const perPrefix = c.limits.perPrefixPerHour ?? 0;
  // The narrower first: one address over its own limit never spends its network's.
  return [
    ...(c.limits.perAddressPerHour > 0 ? [{ scope: "gate-address", subject: c.ip, limit: c.limits.perAddressPerHour, windowSeconds: 3600 }] : []),
    ...(source && perPrefix > 0 ? [{ scope: "gate-prefix", subject: source.prefix, limit: perPrefix, windowSeconds: 3600 }] : []),
  ];
}

/** A source's shares of the admissions ceiling: its /24 or /48's, and an IPv6 /64's inside it. */
export function shareWindows(c: GateCircumstances): Window[] {
  const ceiling = c.limits.admissionsPerHour;
  const source = c.ip ? sourceOf(c.ip) : null;
  if (ceiling <= 0 || !source) return [];
  const prefix = { scope: "gate-admissions-prefix", subject: source.prefix, limit: prefixShare(c), windowSeconds: 3600 };
  const host = source.host ? [{ scope: "gate-admissions-host", subject: source.host, limit: hostShare(c), windowSeconds: 3600 }] : [];
  // The narrower first: a /64 over its share never spends its /48's.
  return [...host, prefix];
}

/** The admissions one /24 or /48 may take per hour. */
export function prefixShare(c: GateCircumstances): number {
  return shareOf(c.limits.admissionsPerHour, c.limits.prefixSharePercent ?? GATE_PREFIX_SHARE_PERCENT);
}

/** The admissions one IPv6 /64 may take per hour (never more than its /48's share). */
export function hostShare(c: GateCircumstances): number {
  return Math.min(prefixShare(c), shareOf(c.limits.admissionsPerHour, c.limits.hostSharePercent ?? GATE_HOST_SHARE_PERCENT));
}

/**
 * An origin's quota counts only presentations that can admit: an agent asking for a bed whose
 * nonce, credential, text and controller passed. A look, a human, a ward request or a filtered
 * presentation cannot lead to a bed, so naming an origin in one never locks that origin's agents out.
 */
export function originWindow(p: Presentation, c: GateCircumstances): Window {
  return { scope: "gate-origin", subject: normalKey(p.origin.trim()), limit: c.limits.perOriginPerHour, windowSeconds: 3600 };
}

/**
 * The city-wide ceiling on new admissions and ward requests per hour (0 is off), at what this
 * presentation may reach of it: all of it with a proven key (a controller key that signed the
 * nonce), else what the reserve leaves (anonymousReach); and without a bid (docs/pow.md: a
 * pow_solution of the suggested effort, or a request signed with a key bound to a citizen) only the
 * open share of what presentations without a key reach. So bids take the rest, on the same stripes.
 */
export function admissionWindow(c: GateCircumstances, keyed: boolean): Window | null {
  const window = ceilingWindow(c.limits);
  if (!window) return null;
  const reach = bidReach(c, keyed);
  return withReach(window, c.bid ? reach : Math.min(reach, gatePowShares(c.limits).open));
}

/** What a presentation reaches of the ceiling with a bid: all of it keyed, else what the reserve leaves. */
function bidReach(c: GateCircumstances, keyed: boolean): number {
  return keyed ? c.limits.admissionsPerHour : anonymousReach(c.limits);
}

export function subjectsMax(c: GateCircumstances): number {
  return c.limits.subjectsMax ?? GATE_SUBJECTS_MAX;
}

/** A first admission's windows: its source's, its shares, its origin, then the city's ceiling (gate-windows.ts). */
export function admissionChain(p: Presentation, c: GateCircumstances, keyed: boolean): Chain {
  return {
    windows: [...sourceWindows(c), ...shareWindows(c), originWindow(p, c)],
    ceiling: admissionWindow(c, keyed),
    subjectsMax: subjectsMax(c),
    bidReach: c.bid ? undefined : bidReach(c, keyed),
  };
}

/** A ward request's windows: its source's, its shares, then the city's ceiling (it carries no key). */
export function wardChain(c: GateCircumstances): Chain {
  return {
    windows: [...sourceWindows(c), ...shareWindows(c)],
    ceiling: admissionWindow(c, false),
    subjectsMax: subjectsMax(c),
    bidReach: c.bid ? undefined : bidReach(c, false),
  };
}

/** When to try again, and at what effort when a bid would be served (`effort` unset: a bid lifts nothing). */
function advice(retryAfterSeconds: number, effort?: number): RetryAdvice {
  return { retry_after_seconds: retryAfterSeconds, ...(effort !== undefined ? { suggested_effort: effort } : {}) };
}

/** What a full window of each scope says. */
function fullWindowReason(window: Window): string {
  const overflow = window.subject.startsWith("overflow/")
    ? " (the city counts no more sources one by one: yours shares one of a few fixed overflow counts with others)"
    : "";
  switch (window.scope) {
    case "gate-prefix":
      return `More than ${window.limit} presentations from your network (${window.subject}) in an hour${overflow}`;
    case "gate-address":
      return `More than ${window.limit} presentations from this address in an hour${overflow}`;
    case "gate-admissions-prefix":
      return `Your network (${window.subject}) took its share of the city's admissions: ${window.limit} an hour${overflow}`;
    case "gate-admissions-host":
      return `Your /64 (${window.subject}) took its share of the city's admissions inside its /48: ${window.limit} an hour${overflow}`;
    case "gate-origin":
      return `More than ${window.limit} admissions asked from this origin in an hour${overflow}`;
    default:
      return `The city admits at most ${window.limit} new citizens and ward requests an hour, and that many came`;
  }
}

/** The filtered verdict of a full window, or null when the slot was taken. */
function floodOf(slot: Slot | null, window: Window): Verdict | null {
  if (!slot || slot.allowed) return null;
  // The address's, the network's or the origin's own window: no bid lifts it, so no effort is said.
  return filtered("flood", `${fullWindowReason(window)}; try again in ${slot.retryAfterSeconds} s.`, advice(slot.retryAfterSeconds));
}

/** The filtered verdict of a chain that did not let the presentation through, or null when it did. */
export function chainFlood(outcome: ChainOutcome, chain: Chain, c: GateCircumstances): Verdict | null {
  switch (outcome.kind) {
    case "taken":
    case "skipped":
      return null;
    case "refused":
      return floodOf(outcome.slot, outcome.window);
    case "ceiling-full":
      return ceilingFlood(outcome, chain, c);
  }
}

/**
 * The ceiling's refusal: with the suggested effort when a bid would be served (the presentation
 * made none and the ceiling counts less than a bid reaches), else only when to retry.
 */
function ceilingFlood(outcome: Extract<ChainOutcome, { kind: "ceiling-full" }>, chain: Chain, c: GateCircumstances): Verdict {
  const ceiling = chain.ceiling!;
  const retry = outcome.retryAfterSeconds;
  const { counted, effort } = ceilingPressure(outcome.stripes, c.limits, c.now);
  const liftable = chain.bidReach !== undefined && counted < chain.bidReach && effort > 0;
  const untouched = "Nothing was counted against your address or origin, nor your network's share.";
  if (liftable) {
    return filtered(
      "flood",
      `Presentations without a bid may fill ${ceiling.reach} of the ${ceiling.limit} admissions and ward requests the city takes an hour, and that many came. ` +
        `A bid is served: present again on a fresh nonce (GET /gate) with pow_solution of at least ${effort} leading zero bits (CITY-POW/1, docs/pow.md), ` +
        `or signed with a key bound to a citizen (CITY-SIG/1), or without a bid in ${retry} s. ${untouched}`,
      advice(retry, effort),
    );
  }
  const reserved =
    (ceiling.reach ?? ceiling.limit) < ceiling.limit
      ? ` Presentations without a proven key reach ${anonymousReach(c.limits)} of them; the rest is kept for presentations whose controller key signs the nonce.`
      : "";
  return filtered(
    "flood",
    `The city admits at most ${ceiling.limit} new citizens and ward requests an hour, and that many came.${reserved} Try again in ${retry} s. ${untouched}`,
    advice(retry),
  );
}

/** Counts a presentation against its source's windows in a statement of its own: its flood verdict, or null. */
export async function countSource(db: Database, windows: Window[], c: GateCircumstances): Promise<Verdict | null> {
  if (!windows.length) return null;
  const chain: Chain = { windows, ceiling: null, subjectsMax: subjectsMax(c) };
  return chainFlood(await takeChain(db, chain, c.now), chain, c);
}
