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
  if (citizen.residencyStatus === "exported") {
    throw new CityError(
      "unauthorized",
      "That credential belonged to a citizen who exported its data and left the city for good: it opens nothing now. The name and origin may present at the gate again as a new citizen.",
    );
  }
  if (citizen.tier === "restricted" && door.whenRestricted === "refuse") {
    throw new CityError(
      "forbidden",
      "This door cannot park writes and the caller is restricted (published trigger: 3 fail-closed content refusals within 86400 seconds). Appeal at POST /api/appeal.",
    );
  }
  return { kind: "citizen", did: citizen.did, tier: citizen.tier };
}

/**
 * last_seen_at moves with proven calls only (called once the request has parsed: a request refused
 * as malformed is not seen), at most once a minute per citizen.
 */
export async function markSeen(db: Database, did: string, now: Date): Promise<void> {
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
