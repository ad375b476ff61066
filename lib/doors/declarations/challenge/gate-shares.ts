import { z } from "zod";
import { hostShare, prefixShare, sponsorNetworkShare, sponsorShare } from "@/lib/city/gate";
import { anonymousReach, bidStepSeconds, gatePowShares, networkStepShare, sourcesToFill } from "@/lib/city/challenge";
import type { GateCircumstances, GateLimits } from "@/lib/city/challenge";
import { NEWCOMER_SECONDS, OVERFLOW_BUCKETS, OVERFLOW_FACTOR } from "@/lib/city/bounds";
import { type Env, env } from "@/lib/env";
import { addressMode } from "@/lib/doors/pipeline/client-address";
import type { PublishedLimit } from "@/lib/doors/door";

/**
 * The gate's limits as configured (GateLimits), and how its admissions ceiling is shared as
 * /api/capabilities and the gate door's limits publish it: per source (an IPv4 /24, an IPv6 /48,
 * an IPv6 /64 inside it, a citizen whose key signs presentations) and the reserve kept for
 * presentations signed by settled citizens.
 */

export function gateLimits(config: Env = env()): GateLimits {
  return {
    perOriginPerHour: config.CITY_GATE_PER_ORIGIN_PER_HOUR,
    perAddressPerHour: config.CITY_GATE_PER_ADDRESS_PER_HOUR,
    admissionsPerHour: config.CITY_GATE_ADMISSIONS_PER_HOUR,
    subjectsMax: config.CITY_GATE_SUBJECTS_MAX,
    perPrefixPerHour: config.CITY_GATE_PER_PREFIX_PER_HOUR,
    prefixSharePercent: config.CITY_GATE_PREFIX_SHARE_PERCENT,
    hostSharePercent: config.CITY_GATE_HOST_SHARE_PERCENT,
    reservePercent: config.CITY_GATE_RESERVE_PERCENT,
  };
}

/** Circumstances with only the limits: what the share arithmetic reads. */
const limitsOnly = (config: Env): GateCircumstances => ({
  now: new Date(0),
  ip: null,
  callerDid: null,
  credential: null,
  credentialRejected: false,
  limits: gateLimits(config),
});

export const AdmissionSharesSchema = z
  .object({
    per_prefix: z.number().int().describe("admissions one IPv4 /24 or IPv6 /48 may take per hour"),
    per_prefix_percent: z.number().int(),
    per_ipv6_64: z.number().int().describe("admissions one IPv6 /64 may take per hour, inside its /48's share"),
    per_ipv6_64_percent: z.number().int(),
    anonymous_reach: z
      .number()
      .int()
      .describe(
        "admissions per hour that every presentation but a settled citizen's signed one may reach together, with a bid (docs/pow.md: proof of work, or signed by a newcomer's key), in steps past three quarters of it",
      ),
    reserve: z
      .number()
      .int()
      .describe(`admissions per hour only presentations signed (CITY-SIG/1) with the key of a citizen admitted at least ${NEWCOMER_SECONDS} s ago may take`),
    per_sponsor: z.number().int().describe("admissions and ward requests one citizen's key may sign per hour (its per_ipv6_64 share)"),
    per_sponsor_network: z
      .number()
      .int()
      .describe(
        "admissions and ward requests the citizens admitted from one IPv4 /24 or IPv6 /48 may sign together per hour (its per_prefix share); only where the network was recorded at their admission (client addresses known)",
      ),
    bids_per_prefix_per_step: z
      .number()
      .int()
      .describe(
        "bids served in steps (docs/pow.md) one IPv4 /24 or IPv6 /48 may have served per step's length (a sliding window): its per_prefix_percent of a step's portion, at least one",
      ),
    reserve_percent: z.number().int(),
    prefixes_to_fill_anonymous_reach: z.number().int().describe("the fewest /24s or /48s that can take the anonymous reach (a botnet's price)"),
    where_addresses_unknown: z.string(),
    overflow: z.string(),
    note: z.string(),
  })
  .describe("how the admissions ceiling is shared among sources, and the reserve");

/** The admissions ceiling's shares as configured now, or null when the ceiling is off. */
export function admissionShares(config: Env = env()): z.infer<typeof AdmissionSharesSchema> | null {
  const ceiling = config.CITY_GATE_ADMISSIONS_PER_HOUR;
  if (ceiling <= 0) return null;
  const c = limitsOnly(config);
  const reach = anonymousReach(c.limits);
  const perPrefix = prefixShare(c);
  return {
    per_prefix: perPrefix,
    per_prefix_percent: config.CITY_GATE_PREFIX_SHARE_PERCENT,
    per_ipv6_64: hostShare(c),
    per_ipv6_64_percent: config.CITY_GATE_HOST_SHARE_PERCENT,
    anonymous_reach: reach,
    reserve: ceiling - reach,
    per_sponsor: sponsorShare(c),
    per_sponsor_network: sponsorNetworkShare(c),
    bids_per_prefix_per_step: networkStepShare(c.limits),
    reserve_percent: config.CITY_GATE_RESERVE_PERCENT,
    prefixes_to_fill_anonymous_reach: sourcesToFill(reach, perPrefix),
    where_addresses_unknown:
      addressMode() === 0
        ? "client addresses are unknown here (CITY_TRUSTED_PROXIES unset): no per-source share applies, only the ceiling, the reserve, the per-sponsor and the per-origin limits"
        : "the shares apply to the client address the trusted proxies saw",
    overflow: `at most CITY_GATE_SUBJECTS_MAX sources and origins are counted one by one; past it a new one is counted in one of ${OVERFLOW_BUCKETS} fixed overflow counts per window (by a hash of it), each ${OVERFLOW_FACTOR} times the window's limit: never refused for the table being full`,
    note: `Shares are sliding hourly windows (rate_windows). Each presentation that can admit (or files a ward request) is counted against its /24 or /48's share, for IPv6 its /64's share too, then the ceiling; a presentation reaches only anonymous_reach of the ceiling unless it is signed (CITY-SIG/1) with the key of a settled citizen (admitted at least ${NEWCOMER_SECONDS} s ago; at most per_sponsor an hour each, per_sponsor_network together for the citizens of one network): the reserve stays theirs whatever a flood does, and a controller key the presentation binds proves nothing (a fresh key is free). Past three quarters of anonymous_reach (the open share) a presentation is served only as a bid: a proof-of-work solution of the suggested effort or a newcomer's signature, in steps (the pow block says the effort and the step), or a settled citizen's signature, not stepped (CITY-POW/1, docs/pow.md).`,
  };
}

/** The gate door's published per-source limits (presentations and nonces per network; the shares). */
export function sourceLimits(what: "presentations" | "gate nonces", config: Env = env()): PublishedLimit[] {
  if (addressMode() === 0) return [];
  const perPrefix = config.CITY_GATE_PER_PREFIX_PER_HOUR;
  const limits: PublishedLimit[] = [];
  if (perPrefix > 0)
    limits.push({
      name: what === "presentations" ? "presentations_per_prefix" : "gate_nonces_per_prefix",
      limit: perPrefix,
      window_seconds: 3600,
      per: `network: an IPv4 /24 or an IPv6 /48 (env CITY_GATE_PER_PREFIX_PER_HOUR; 0 is off)`,
      over: what === "presentations" ? "filtered" : "refused",
    });
  const shares = what === "presentations" ? admissionShares(config) : null;
  if (shares) {
    limits.push(
      {
        name: "admissions_per_prefix",
        limit: shares.per_prefix,
        window_seconds: 3600,
        per: `network: an IPv4 /24 or an IPv6 /48, ${shares.per_prefix_percent}% of the admissions ceiling (env CITY_GATE_PREFIX_SHARE_PERCENT)`,
        over: "filtered",
      },
      {
        name: "admissions_per_ipv6_64",
        limit: shares.per_ipv6_64,
        window_seconds: 3600,
        per: `IPv6 /64 inside its /48, ${shares.per_ipv6_64_percent}% of the admissions ceiling (env CITY_GATE_HOST_SHARE_PERCENT)`,
        over: "filtered",
      },
      {
        name: "bids_per_prefix_per_step",
        limit: shares.bids_per_prefix_per_step,
        window_seconds: bidStepSeconds(gateLimits(config)),
        per: `network: an IPv4 /24 or an IPv6 /48, bids served in steps (docs/pow.md), ${shares.per_prefix_percent}% of a step's portion, at least one`,
        over: "filtered",
      },
    );
  }
  return limits;
}

/** The reserve as a published limit: what keyless presentations reach of the ceiling. */
export function reserveLimits(config: Env = env()): PublishedLimit[] {
  const shares = admissionShares(config);
  if (!shares) return [];
  return [
    {
      name: "admissions_without_key",
      limit: shares.anonymous_reach,
      window_seconds: 3600,
      per: `city: admissions and ward requests of every presentation not signed by a settled citizen; the other ${shares.reserve_percent}% is kept for presentations signed (CITY-SIG/1) with the key of a citizen admitted at least ${NEWCOMER_SECONDS} s ago (env CITY_GATE_RESERVE_PERCENT)`,
      over: "filtered",
    },
    {
      name: "admissions_without_bid",
      limit: gatePowShares(gateLimits(config)).open,
      window_seconds: 3600,
      per: `city: admissions and ward requests of presentations without a bid (CITY-POW/1, docs/pow.md), three quarters of admissions_without_key; past it only a pow_solution of the suggested effort or a request signed with a key bound to a citizen is served, in steps unless that citizen is settled`,
      over: "filtered",
    },
    {
      name: "admissions_per_sponsor",
      limit: shares.per_sponsor,
      window_seconds: 3600,
      per: `citizen: admissions and ward requests of presentations signed with its key (CITY-SIG/1), its share as one IPv6 /64's (env CITY_GATE_HOST_SHARE_PERCENT)`,
      over: "filtered",
    },
    ...(addressMode() === 0
      ? []
      : [
          {
            name: "admissions_per_sponsor_network",
            limit: shares.per_sponsor_network,
            window_seconds: 3600,
            per: `network: admissions and ward requests of presentations signed with the keys of the citizens admitted from one IPv4 /24 or IPv6 /48, together, its share as one network's (env CITY_GATE_PREFIX_SHARE_PERCENT)`,
            over: "filtered" as const,
          },
        ]),
  ];
}
