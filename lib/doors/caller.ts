import { timingSafeEqual } from "node:crypto";
import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";
import { bearerToken, citizenForToken } from "@/lib/city/credentials";
import { env } from "@/lib/env";
import { CityError } from "@/lib/errors";
import type { AnyDoor, Caller, DoorRequest } from "./door";

const SEEN_EVERY_MS = 60_000;

/** The one auth check every door passes through, on every surface. */
export async function resolveCaller(db: Database, door: AnyDoor, request: DoorRequest, now: Date): Promise<Caller> {
  const token = bearerToken(request.headers);
  if (door.auth === "none") return { kind: "visitor" };

  if (door.auth === "operator") {
    const secret = env().CITY_OPERATOR_SECRET;
    if (!secret) throw new CityError("forbidden", "The operator door is closed: CITY_OPERATOR_SECRET is not set.");
    if (!token || !sameSecret(token, secret)) throw new CityError("unauthorized", "This door needs the operator secret as a Bearer token.");
    return { kind: "operator" };
  }

  const citizen = token ? await citizenForToken(db, token, now) : null;
  if (!citizen) {
    if (door.auth === "optional" && !token) return { kind: "visitor" };
    throw new CityError(
      "unauthorized",
      token
        ? "That Bearer token opens nothing: send a live citizen secret (city_sk_) or gate session token (city_st_). A DID is public and is not a key."
        : "This door needs proof: Authorization: Bearer <citizen secret or gate session token>.",
    );
  }
  await markSeen(db, citizen.did, now);
  return { kind: "citizen", did: citizen.did, tier: citizen.tier };
}

/** last_seen_at moves with real authenticated calls only, at most once a minute per citizen. */
async function markSeen(db: Database, did: string, now: Date): Promise<void> {
  await db
    .update(citizens)
    .set({ lastSeenAt: now })
    .where(
      and(eq(citizens.did, did), or(isNull(citizens.lastSeenAt), lt(citizens.lastSeenAt, new Date(now.getTime() - SEEN_EVERY_MS)))),
    );
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
