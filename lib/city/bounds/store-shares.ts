import { type SQL, sql } from "drizzle-orm";
import { isIP } from "node:net";
import { type Env, env } from "@/lib/env";
import { CITY_STORES, STORE_RESERVE_PERCENT, STORE_STANDING_DAYS, type StoreName, storeBytesVariable, storePerHourVariable } from "@/lib/store-limits";
import { NEWCOMER_SECONDS } from "./newcomers";

/*
 * Shares per subject of the city-wide store bounds (issue 43, items 1, 2 and 4). A bound that anyone
 * fills first-come is a lever: one source fills it and refuses everyone else until the window
 * moves. So, beside the store's own bounds (lib/city/bounds/store-bounds.ts):
 *
 * - one subject takes at most its share of the store's hour: a newcomer (or one visitor source, an
 *   IPv4 /24 or an IPv6 /48) a fixed percent of the newcomers' hour; a settled citizen a percent of
 *   the whole hour per day in the city, growing with its standing up to STORE_STANDING_DAYS days;
 * - a citizen holds at most its own total in each append-only store (a per mille of the store's
 *   total), so no citizen's writes alone fill a store;
 * - newcomers and visitors together fill at most the newcomers' line of the total (the total less
 *   the reserve, at least a fifth), and of the hour at most the newcomers' share (at most 80 %):
 *   the reserve is kept for settled citizens;
 * - the citizens admitted from one network (the gate keeps each citizen's /24 or /48, migrations
 *   0053 and 0055) share one part of each store: its newcomers together take at most
 *   CITY_STORE_NEWCOMER_NETWORK_PERCENT of the newcomers' hour (never more than the network's
 *   whole part), all its citizens together at most CITY_STORE_NETWORK_PERCENT of the hour: one
 *   network's citizens, newcomers or settled, never fill an hour for everyone else. The identity
 *   log and distress filings are charged to no network (a neighbour must not stop a recovery or a
 *   call for help).
 *
 * Each subject's bytes are counted on its own row (city_store_subjects, migration 0051), locked only
 * by its own writes, in the write's statement before the store's stripes: exact, no shared row.
 */

export interface StoreShares {
  store: StoreName;
  /** Bytes one newcomer, or one visitor source, may add per clock hour. */
  newcomerSubjectPerHour: number;
  /** Bytes the newcomers admitted from one network (IPv4 /24, IPv6 /48) may add together per clock hour. */
  newcomerNetworkPerHour: number;
  /** Bytes the citizens admitted from one network, newcomers and settled, may add together per clock hour. */
  networkPerHour: number;
  /** Bytes a settled citizen may add per clock hour for each day in the city, up to STORE_STANDING_DAYS. */
  settledPerHourPerDay: number;
  /** Bytes one citizen may hold in the store (append-only stores), or null: none of its own. */
  subjectTotal: number | null;
  /** Bytes newcomers and visitors together may fill of the total: the total less the reserve. */
  newcomerTotal: number;
  /** Bytes of the total and of the hour out of newcomers' and visitors' reach. */
  reserveTotal: number;
  reservePerHour: number;
}

/** The reserve of a bound: at least STORE_RESERVE_PERCENT of it, rounded up. */
export function reserveOf(bound: number): number {
  if (bound >= Number.MAX_SAFE_INTEGER / 100) return Math.ceil(bound / 100) * STORE_RESERVE_PERCENT;
  return Math.ceil((bound * STORE_RESERVE_PERCENT) / 100);
}

/** A store's shares as configured now (env CITY_STORE_NEWCOMER_SUBJECT_PERCENT, _NEWCOMER_NETWORK_PERCENT, _NETWORK_PERCENT, _SUBJECT_PERCENT, _SUBJECT_TOTAL_PERMILLE). */
export function storeShares(store: StoreName, config: Env = env()): StoreShares {
  const part = CITY_STORES[store].env;
  const total = config[storeBytesVariable(part)];
  const perHour = config[storePerHourVariable(part)];
  const newcomerPerHour = Math.floor((perHour * config.CITY_STORE_NEWCOMER_PERCENT) / 100);
  const reserveTotal = reserveOf(total);
  const networkPerHour = Math.floor((perHour * config.CITY_STORE_NETWORK_PERCENT) / 100);
  return {
    store,
    newcomerSubjectPerHour: Math.floor((newcomerPerHour * config.CITY_STORE_NEWCOMER_SUBJECT_PERCENT) / 100),
    // A part of the network's hour: never more than the whole of it, however the percents are set.
    newcomerNetworkPerHour: Math.min(networkPerHour, Math.floor((newcomerPerHour * config.CITY_STORE_NEWCOMER_NETWORK_PERCENT) / 100)),
    networkPerHour,
    settledPerHourPerDay: Math.floor((perHour * config.CITY_STORE_SUBJECT_PERCENT) / 100),
    subjectTotal: CITY_STORES[store].subjectTotal ? Math.floor((total * config.CITY_STORE_SUBJECT_TOTAL_PERMILLE) / 1000) : null,
    newcomerTotal: total - reserveTotal,
    reserveTotal,
    reservePerHour: perHour - newcomerPerHour,
  };
}

/**
 * One subject's share of the store's hour. `days`: whole days since the citizen's admission, or
 * null for a visitor source; under one day (a newcomer) or a visitor: the newcomer's share; settled:
 * its days (at most STORE_STANDING_DAYS) times the settled share per day, never less than a newcomer's.
 */
export function subjectHourShare(shares: StoreShares, days: number | null): number {
  if (days === null || days < 1) return shares.newcomerSubjectPerHour;
  return Math.max(shares.newcomerSubjectPerHour, shares.settledPerHourPerDay * Math.min(Math.floor(days), STORE_STANDING_DAYS));
}

/** The same share in SQL, for a citizen by its DID (its admission read in the write's statement) or a visitor (null). */
export function subjectHourShareSql(shares: StoreShares, did: string | null, now: Date): SQL {
  const newcomer = sql`${shares.newcomerSubjectPerHour}::bigint`;
  if (did === null) return newcomer;
  const days = sql`floor(extract(epoch FROM (${now.toISOString()}::timestamptz - c.bound_at)) / ${NEWCOMER_SECONDS})::bigint`;
  return sql`coalesce((SELECT CASE WHEN d.days IS NULL OR d.days < 1 THEN ${newcomer}
      ELSE greatest(${newcomer}, ${shares.settledPerHourPerDay}::bigint * least(d.days, ${STORE_STANDING_DAYS}::bigint)) END
    FROM (SELECT ${days} AS days FROM citizens c WHERE c.did = ${did}) d), ${newcomer})`;
}

/**
 * A visitor's subject: its source prefix, an IPv4 /24 or an IPv6 /48 (the client address as
 * lib/doors/pipeline/client-address.ts reads it: IPv4, or an IPv6 /64). Where addresses are not known, every
 * visitor is the one subject "src:unknown": a flood then fills only the share of that one subject.
 */
export function visitorSubject(ip: string | null): string {
  if (!ip) return "src:unknown";
  if (isIP(ip) === 4) return `src:${ip.split(".").slice(0, 3).join(".")}.0/24`;
  const groups = ip.replace(/::\/64$/, "").split(":");
  if (groups.length >= 3 && groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return `src:${groups.slice(0, 3).join(":").toLowerCase()}::/48`;
  return "src:unknown";
}

/** A citizen's subject: its DID. */
export function citizenSubject(did: string): string {
  return `did:${did}`;
}

/** A citizen's charge subject, for Charge.subject (lib/city/bounds/store-bounds.ts). */
export function citizenShare(did: string): { id: string; did: string } {
  return { id: citizenSubject(did), did };
}

/** A visitor's charge subject, for Charge.subject: its source prefix (visitorSubject). */
export function visitorShare(ip: string | null): { id: string; did: null } {
  return { id: visitorSubject(ip), did: null };
}

/** A network's subject in city_store_subjects: "net:" and its /24 or /48. */
export const NETWORK_SUBJECT_PREFIX = "net:";

/**
 * A citizen's admission network subject, in SQL: "net:<network>" from admission_networks, or null
 * (no network recorded: its address was not known, or its first day was over before networks were
 * kept for good; a visitor; or a charge `charged` false: a store or a filing charged to no network).
 */
export function networkSubjectSql(did: string | null, charged = true): SQL {
  if (did === null || !charged) return sql`NULL::text`;
  return sql`(SELECT ${NETWORK_SUBJECT_PREFIX} || n.network FROM admission_networks n WHERE n.did = ${did})`;
}

/** The part of the network's hour a writer is bounded by, in SQL: its newcomers' part for a newcomer, else the network's whole part. */
export function networkHourShareSql(shares: StoreShares, newcomer: SQL): SQL {
  return sql`(CASE WHEN ${newcomer} THEN ${shares.newcomerNetworkPerHour}::bigint ELSE ${shares.networkPerHour}::bigint END)`;
}
