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
  bidStepSeconds,
  ceilingPressure,
  ceilingWindow,
  gatePowShares,
  networkStepShare,
  POW_MAX_EFFORT,
  stepEffort,
} from "@/lib/city/challenge";
import {
  bucketMs,
  bucketOf,
  type Chain,
  NEWCOMER_SECONDS,
  type ChainOutcome,
  stripesRetryAfter,
  stripesRoom,
  takeChain,
  type Slot,
  type Window,
  withReach,
  withSteps,
} from "@/lib/city/bounds";
import { normalKey } from "@/lib/city/directory";

/**
 * The gate's flood rule: the windows a presentation is counted in and the filtered verdict of one
 * that is full. Every presentation not proven as a resume is counted by its source (gate-prefixes.ts):
 * its address (`gate-address`: an IPv4 address or an IPv6 /64), then its /24 or /48 (`gate-prefix`).
 * One that can be a first admission (or a ward request) is counted too against its source's share
 * of the city's admissions ceiling (for IPv6 its /64's smaller share, `gate-admissions-host`, then
 * its /48's, `gate-admissions-prefix`), its origin, and then the ceiling itself, of which a
 * presentation reaches only what the reserve leaves unless a settled citizen's key signed it (a
 * sponsor, itself counted: `gate-sponsor`).
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

/**
 * A network's bids in a step: a bid served in steps (all but a settled sponsor's) counts on its /24 or
 * /48's own window of one step's length, at most its share of a step's portion (at least one), so no
 * network alone takes a step's bid slots from everyone else. Counted with the other windows, given
 * back with them when the ceiling refuses.
 */
function bidShareWindows(c: GateCircumstances): Window[] {
  const source = c.ip ? sourceOf(c.ip) : null;
  const seconds = bidStepSeconds(c.limits);
  if (c.stepped !== true || !source || !seconds) return [];
  return [{ scope: "gate-bids-prefix", subject: source.prefix, limit: networkStepShare(c.limits), windowSeconds: seconds }];
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
 * presentation may reach of it: all of it when signed with the key of a settled citizen (admitted a
 * day ago or more: the reserve is theirs), else what the reserve leaves (anonymousReach); and without
 * a bid (docs/pow.md: a pow_solution of the suggested effort, or a request signed with a key bound to
 * a citizen) only the open share of that. So bids take the rest, on the same stripes; every bid but
 * a settled sponsor's only in steps: past the open share, each step of the hour releases its
 * portion of the bids' part (steppedBidWindow), whatever earlier steps took. A controller key the
 * presentation binds proves nothing here: a fresh key is free.
 */
export function admissionWindow(c: GateCircumstances): Window | null {
  if (!c.bid) {
    const window = ceilingWindow(c.limits);
    return window && withReach(window, Math.min(reachOf(c), gatePowShares(c.limits).open));
  }
  return bidWindow(c);
}

/** The ceiling as this presentation takes it with a bid: a settled sponsor's, its whole reach; else in steps past the open share. */
function bidWindow(c: GateCircumstances): Window | null {
  const window = ceilingWindow(c.limits);
  if (!window) return null;
  const reached = withReach(window, reachOf(c));
  return c.sponsor?.settled === true ? reached : withSteps(reached, gatePowShares(c.limits).open);
}

/** What a presentation reaches of the ceiling: all of it signed by a settled citizen, else what the reserve leaves. */
function reachOf(c: GateCircumstances): number {
  return c.sponsor?.settled === true ? c.limits.admissionsPerHour : anonymousReach(c.limits);
}

/**
 * The sponsor's own window: one citizen's key signs at most as many admissions and ward requests an
 * hour as one IPv6 /64 may be admitted (hostShare), so no sponsor alone spends the reserve; then, for
 * a settled sponsor, its admission network's: the settled sponsors admitted from one /24 or /48
 * together sign at most what one network may be admitted (prefixShare), so no one network's settled
 * citizens spend it either. The narrower first: a sponsor over its own share never spends its network's.
 */
function sponsorWindows(c: GateCircumstances): Window[] {
  if (!c.sponsor || c.limits.admissionsPerHour <= 0) return [];
  const own = { scope: "gate-sponsor", subject: c.sponsor.did, limit: sponsorShare(c), windowSeconds: 3600 };
  // Only a settled sponsor's count on its network: a network's newcomers, whose signatures are bids
  // served in steps, must not spend what its settled citizens may sign.
  if (!c.sponsor.network || !c.sponsor.settled) return [own];
  return [own, { scope: "gate-sponsor-network", subject: c.sponsor.network, limit: sponsorNetworkShare(c), windowSeconds: 3600 }];
}

/** The admissions and ward requests one citizen's key may sign per hour. */
export function sponsorShare(c: GateCircumstances): number {
  return hostShare(c);
}

/** The admissions and ward requests the citizens admitted from one network may sign together per hour. */
export function sponsorNetworkShare(c: GateCircumstances): number {
  return prefixShare(c);
}

export function subjectsMax(c: GateCircumstances): number {
  return c.limits.subjectsMax ?? GATE_SUBJECTS_MAX;
}

/**
 * A first admission's windows: its source's (kept whatever follows: they count every presentation),
 * for a stepped bid its network's share of the step, its sponsor's, its shares, its origin, then the
 * city's ceiling (gate-windows.ts); a refusal gives back what the others took.
 */
export function admissionChain(p: Presentation, c: GateCircumstances): Chain {
  return {
    windows: [...sourceWindows(c), ...bidShareWindows(c), ...sponsorWindows(c), ...shareWindows(c), originWindow(p, c)],
    keeps: PRESENTATION_SCOPES,
    ceiling: admissionWindow(c),
    subjectsMax: subjectsMax(c),
    bidCeiling: c.bid ? undefined : (bidWindow({ ...c, bid: true }) ?? undefined),
  };
}

/** A ward request's windows: as a first admission's (admissionChain), its origin aside. */
export function wardChain(c: GateCircumstances): Chain {
  return {
    windows: [...sourceWindows(c), ...bidShareWindows(c), ...sponsorWindows(c), ...shareWindows(c)],
    keeps: PRESENTATION_SCOPES,
    ceiling: admissionWindow(c),
    subjectsMax: subjectsMax(c),
    bidCeiling: c.bid ? undefined : (bidWindow({ ...c, bid: true }) ?? undefined),
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
    case "gate-bids-prefix":
      return `Your network (${window.subject}) had its share of the bids served in steps: ${window.limit} every ${window.windowSeconds} s${overflow}`;
    case "gate-sponsor":
      return `The citizen whose key signed this presentation (${window.subject}) signed its share of the city's admissions and ward requests: ${window.limit} an hour`;
    case "gate-sponsor-network":
      return `The citizens admitted from the network of the citizen whose key signed this presentation (${window.subject}) signed that network's share of the city's admissions and ward requests: ${window.limit} an hour`;
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
 * The ceiling's refusal, read from its stripes as the statement saw them. For the ceiling as a bid of
 * this presentation takes it (its own when it bid, chain.bidCeiling when it did not):
 * - a bid is served now (the presentation made none): the suggested effort, and when to retry without one;
 * - this step's bid slots are taken but the reach is not full (keyless bids, in steps): so said, with
 *   the seconds until a step releases a slot again (the next step, but when settled citizens'
 *   sponsored admissions filled more) and the effort that step asks (stepEffort);
 * - the reach is full, or a bid lifts nothing: when it frees, and no effort.
 */
function ceilingFlood(outcome: Extract<ChainOutcome, { kind: "ceiling-full" }>, chain: Chain, c: GateCircumstances): Verdict {
  const ceiling = chain.ceiling!;
  const retry = outcome.retryAfterSeconds;
  const { effort } = ceilingPressure(outcome.stripes, c.limits, c.now);
  const untouched = "Nothing was counted against your address or origin, nor your network's share.";
  const bid = chain.bidCeiling ?? (ceiling.steps ? ceiling : undefined);
  const madeNone = chain.bidCeiling !== undefined;
  if (madeNone && effort > 0 && stripesRoom(outcome.stripes, bid!, c.now) > 0) {
    return filtered(
      "flood",
      `Presentations without a bid may fill ${ceiling.reach} of the ${ceiling.limit} admissions and ward requests the city takes an hour, and that many came. ` +
        `A bid is served: present again on a fresh nonce (GET /gate) with pow_solution of at least ${effort} leading zero bits (CITY-POW/1, docs/pow.md), ` +
        `or signed with a key bound to a citizen (CITY-SIG/1), or without a bid in ${retry} s. ${untouched}`,
      advice(retry, effort),
    );
  }
  if (bid?.steps && stripesRoom(outcome.stripes, { ...bid, steps: undefined }, c.now) > 0) {
    // Keyless bids past the open share are served in steps: this one's are taken, the reach is not full.
    const wait = stripesRetryAfter(outcome.stripes, bid, c.now);
    const stepMs = bucketMs(bid);
    const next = (bucketOf(bid, c.now) + 1) * stepMs;
    const opens = c.now.getTime() + wait * 1000;
    const at = Math.max(next, Math.floor(opens / stepMs) * stepMs);
    const asked = stepEffort(outcome.stripes, c.limits, new Date(at));
    const when =
      at === next
        ? `the next step opens at ${new Date(next).toISOString()} (in ${wait} s)`
        : `admissions signed by settled citizens filled more; a step releases bid slots again at ${new Date(at).toISOString()} (in ${wait} s)`;
    return filtered(
      "flood",
      `Bids for this step are taken; ${when}. Bids past the open share are served in steps of ${stepMs / 1000} s, each releasing its portion of the bid slots whatever earlier steps took (docs/pow.md). ` +
        `Then present on a fresh nonce (GET /gate) with pow_solution of at least ${asked} leading zero bits (the most that step asks; never more than ${POW_MAX_EFFORT}), ` +
        `or now, signed with the key of a citizen admitted at least ${NEWCOMER_SECONDS} s ago (CITY-SIG/1), which is not stepped. ${untouched}`,
      advice(wait, asked),
    );
  }
  const reserved =
    (ceiling.reach ?? ceiling.limit) < ceiling.limit
      ? ` Presentations reach ${anonymousReach(c.limits)} of them; the rest is kept for presentations signed with the key of a citizen admitted at least ${NEWCOMER_SECONDS} s ago (CITY-SIG/1).`
      : "";
  // Full for a bid too: when it frees for one (or for this presentation, when no bid would lift it).
  const frees = bid ? Math.min(retry, stripesRetryAfter(outcome.stripes, bid, c.now)) : retry;
  return filtered(
    "flood",
    `The city admits at most ${ceiling.limit} new citizens and ward requests an hour, and that many came.${reserved} A slot frees in ${frees} s. ${untouched}`,
    advice(frees),
  );
}

/** Counts a presentation against its source's windows in a statement of its own: its flood verdict, or null. */
export async function countSource(db: Database, windows: Window[], c: GateCircumstances): Promise<Verdict | null> {
  if (!windows.length) return null;
  const chain: Chain = { windows, ceiling: null, subjectsMax: subjectsMax(c) };
  return chainFlood(await takeChain(db, chain, c.now), chain, c);
}
