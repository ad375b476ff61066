import { LIMITS } from "@/lib/city/protocols";
import { type Env, env } from "@/lib/env";
import { addressMode } from "./client-address";
import type { AnyDoor, PublishedLimit } from "./door";

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
  return [{ name: l.name, limit: value, ...(l.windowSeconds ? { window_seconds: l.windowSeconds } : {}), per: `${l.per} (env ${String(l.variable)}${switchable})`, over: l.over }];
}

/**
 * The card's limits: the spec's table with the bounds this deployment lowered (the city-wide
 * locker bytes), and every door's published limits as its declaration computes them now, so a
 * configured limit (gate, ward, locker, and any a door adds) shows here as it does in OpenAPI and
 * llms.txt.
 */
export function cardLimits(doors: readonly AnyDoor[], config: Env = env()) {
  return {
    ...LIMITS,
    locker: { ...LIMITS.locker, bytesCityWide: config.CITY_LOCKER_CITY_BYTES },
    doors: Object.fromEntries(doors.filter((d) => d.limits?.length).map((d) => [d.name, d.limits!])),
  };
}
