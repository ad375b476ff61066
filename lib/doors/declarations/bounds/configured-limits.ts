import { LIMITS } from "@/lib/city/protocols";
import { NEWCOMER_SECONDS, storeBound, storeLimits, storeShares, type StoreShares } from "@/lib/city/bounds";
import { type Env, env } from "@/lib/env";
import {
  CITY_STORES,
  STORE_RESERVE_PERCENT,
  STORE_STANDING_DAYS,
  STORES_WITHOUT_NETWORK_SHARE,
  type StoreName,
  storeBytesVariable,
  storePerHourVariable,
} from "@/lib/store-limits";
import { addressMode } from "@/lib/doors/pipeline/client-address";
import type { AnyDoor, PublishedLimit } from "@/lib/doors/door";

/**
 * Limits a deployment sets by environment variable are published as they are in force: read from
 * the configuration when a document is built (a door declares them with a getter), never from a
 * constant. A limit that 0 turns off is not published at all, so no document names a bound the
 * city does not apply.
 */
export function configuredLimit(l: {
  name: string;
  variable: keyof Env;
  per: string;
  over: PublishedLimit["over"];
  windowSeconds?: number;
  /** 0 turns the limit off (else 0 is a real bound, published as such). */
  zeroIsOff?: boolean;
  /** Counted per client address: not in force (so not published) where addresses are unknown. */
  perAddress?: boolean;
  config?: Env;
}): PublishedLimit[] {
  const value = (l.config ?? env())[l.variable];
  if (typeof value !== "number") throw new Error(`${String(l.variable)} is not a numeric limit`);
  if (l.zeroIsOff && value === 0) return [];
  if (l.perAddress && addressMode() === 0) return [];
  const switchable = l.zeroIsOff ? "; 0 is off" : "";
  return [
    {
      name: l.name,
      limit: value,
      ...(l.windowSeconds ? { window_seconds: l.windowSeconds } : {}),
      per: `${l.per} (env ${String(l.variable)}${switchable})`,
      over: l.over,
    },
  ];
}

/**
 * The card's limits: the spec's table with the bounds this deployment lowered (the city-wide
 * locker bytes), the city-wide store bounds as configured, and every door's published limits as its declaration computes them now, so a
 * configured limit (gate, ward, locker, and any a door adds) shows here as it does in OpenAPI and
 * llms.txt.
 */
export function cardLimits(doors: readonly AnyDoor[], config: Env = env()) {
  return {
    ...LIMITS,
    locker: { ...LIMITS.locker, bytesCityWide: config.CITY_LOCKER_CITY_BYTES },
    stores: storeLimits(config),
    doors: Object.fromEntries(doors.filter((d) => d.limits?.length).map((d) => [d.name, d.limits!])),
  };
}

/**
 * A store's city-wide bounds (lib/city/bounds/store-bounds.ts), as a door that adds to it publishes them:
 * bytes in total, bytes per clock hour, and the newcomers' share of the hour, as configured now.
 */
export function storeBoundLimits(store: StoreName, config: Env = env()): PublishedLimit[] {
  const part = CITY_STORES[store].env;
  const bound = storeBound(store, config);
  const shares = storeShares(store, config);
  return [
    ...configuredLimit({
      name: `city_${store}_bytes`,
      variable: storeBytesVariable(part),
      per: `city: bytes of ${CITY_STORES[store].what}, in total`,
      over: "refused",
      config,
    }),
    ...configuredLimit({
      name: `city_${store}_bytes_per_hour`,
      variable: storePerHourVariable(part),
      windowSeconds: 3600,
      per: `city: bytes added to ${store} per clock hour (UTC)`,
      over: "refused",
      config,
    }),
    {
      name: `city_${store}_newcomer_bytes_per_hour`,
      limit: bound.newcomerPerHour,
      window_seconds: 3600,
      per: `city: bytes added to ${store} per clock hour by newcomers together (citizens admitted less than ${NEWCOMER_SECONDS} s ago, and visitors): ${bound.newcomerPercent}% of the hour's bound (env CITY_STORE_NEWCOMER_PERCENT)`,
      over: "refused",
    },
    {
      name: `city_${store}_newcomer_bytes`,
      limit: bound.newcomerTotal,
      per: `city: bytes newcomers and visitors together may fill of ${store}'s total; the rest (at least ${STORE_RESERVE_PERCENT}%) is the settled citizens' reserve`,
      over: "refused",
    },
    {
      name: `city_${store}_subject_bytes_per_hour`,
      limit: shares.newcomerSubjectPerHour,
      window_seconds: 3600,
      per: `subject: bytes one newcomer, or one visitor source (an IPv4 /24, an IPv6 /48), may add to ${store} per clock hour (env CITY_STORE_NEWCOMER_SUBJECT_PERCENT of the newcomers' share); a settled citizen ${shares.settledPerHourPerDay} per day in the city, up to ${STORE_STANDING_DAYS} days (env CITY_STORE_SUBJECT_PERCENT of the hour's bound)`,
      over: "refused",
    },
    ...networkLimit(store, shares),
    ...(shares.subjectTotal === null
      ? []
      : [
          {
            name: `city_${store}_citizen_bytes`,
            limit: shares.subjectTotal,
            per: `citizen: bytes one citizen may hold in ${store} (env CITY_STORE_SUBJECT_TOTAL_PERMILLE of its total)`,
            over: "refused" as const,
          },
        ]),
  ];
}

/** A store's part per network of its hour, where its writes are charged to a network. */
function networkLimit(store: StoreName, shares: StoreShares): PublishedLimit[] {
  if (STORES_WITHOUT_NETWORK_SHARE.includes(store)) return [];
  return [
    {
      name: `city_${store}_network_bytes_per_hour`,
      limit: shares.networkPerHour,
      window_seconds: 3600,
      per: `network: bytes the citizens admitted from one network (an IPv4 /24, an IPv6 /48) may add to ${store} per clock hour together, however long they have lived here (env CITY_STORE_NETWORK_PERCENT of the hour's bound); its newcomers a part of it (subject_bytes_per_hour.newcomer_network in /api/capabilities; env CITY_STORE_NEWCOMER_NETWORK_PERCENT of the newcomers' share)`,
      over: "refused",
    },
  ];
}
