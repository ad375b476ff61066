import { timingSafeEqual } from "node:crypto";
import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";
import {
  bearerToken,
  citizenForToken,
  type CitizenLock,
  heldCitizenForSignature,
  heldCitizenForToken,
  type Presented,
  keyGone,
  recordNonce,
} from "@/lib/city/keys";
import { env } from "@/lib/env";
import { CityError } from "@/lib/errors";
import { type AnyDoor, type Caller, type DoorRequest, isWrite } from "@/lib/doors/door";
import { type SignedCaller, signedCaller, withAcceptSignature } from "./signature";

const SEEN_EVERY_MS = 60_000;

/**
 * The one auth check every door passes through, on every surface. With `hold`, the caller is read
 * inside the write's transaction with its row locked until the transaction ends (see
 * heldCitizenForToken): a citizen exported a moment ago is refused, and none can be exported
 * while the write runs.
 */
export async function resolveCaller(
  db: Database,
  door: AnyDoor,
  request: DoorRequest,
  now: Date,
  options: { markSeen?: boolean; hold?: CitizenLock; spendNonce?: boolean } = {},
): Promise<Caller> {
  const token = bearerToken(request.headers);
  if (door.auth === "none") return { kind: "visitor" };
  const signing = signedCaller(db, request, now);
  if (signing) {
    try {
      return await signatureCaller(db, door, signing, now, options);
    } catch (err) {
      // A key rotated away long ago may still be in a citizen's key history: such a door checks it itself.
      if (door.keyHistorySignatures && err instanceof CityError && err.code === "unknown_key") return { kind: "visitor", signedWithUnknownKey: true };
      throw withAcceptSignature(err, request);
    }
  }

  if (door.auth === "operator") {
    const secret = env().CITY_OPERATOR_SECRET;
    if (!secret) throw new CityError("forbidden", "The operator door is closed: CITY_OPERATOR_SECRET is not set.");
    if (!token || !sameSecret(token, secret)) throw new CityError("unauthorized", "This door needs the operator secret as a Bearer token.");
    return { kind: "operator" };
  }

  // The look-up marks presence in the same statement (see markSeen) when the request parsed.
  const seen = options.markSeen ? seenBefore(now) : null;
  const opened = !token ? "none" : options.hold ? await citizenHeldBy(db, token, now, options.hold, seen) : await citizenOpenedBy(db, token, now, seen);
  if (opened === "none") {
    if (door.auth === "optional" && !token) return { kind: "visitor" };
    // A writing door with optional credentials (the gate, recovery) answers for itself: the gate
    // gives a filtered verdict, recovery needs no credential. A reading door says so with a 401.
    if (door.auth === "optional" && isWrite(door)) return { kind: "visitor", credentialRejected: true };
    throw new CityError(
      "unauthorized",
      token
        ? "That Bearer token opens nothing: send a live citizen secret (city_sk_) or gate session token (city_st_). A DID is public and is not a key."
        : "This door needs proof: Authorization: Bearer <citizen secret or gate session token>.",
    );
  }
  if (opened === "exported") {
    if (door.auth === "optional" && isWrite(door)) return { kind: "visitor", credentialRejected: true };
    throw new CityError(
      "unauthorized",
      "That credential belonged to a citizen who exported its data and left the city for good: it opens nothing now. The name and origin may present at the gate again as a new citizen.",
    );
  }
  const { citizen, credential, tokenId } = opened;
  return {
    kind: "citizen",
    did: citizen.did,
    tier: citizen.tier,
    residencyStatus: citizen.residencyStatus,
    bedId: citizen.bedId,
    credential,
    ...(tokenId ? { tokenId } : {}),
  };
}

/**
 * A citizen proven by its request signature (CITY-SIG/1): verified before anything is locked or
 * stored (lib/doors/pipeline/signature.ts). A write then holds the citizen in its first statement, which
 * also checks the key again and records the nonce; a request outside one transaction records a
 * signed write's nonce in a statement of its own. As strong as the citizen secret.
 */
async function signatureCaller(
  db: Database,
  door: AnyDoor,
  signing: Promise<SignedCaller>,
  now: Date,
  options: { markSeen?: boolean; hold?: CitizenLock; spendNonce?: boolean },
): Promise<Caller> {
  if (door.auth === "operator")
    throw new CityError("unauthorized", "This door needs the operator secret as a Bearer token; a citizen's signature does not open it.");
  const { key, signed } = await signing;
  const current = door.currentKeyOnly === true;
  if (current && key.rotatedAt) throw rotatedAway(key.rotatedAt);
  if (options.hold) {
    const seen = options.markSeen ? seenBefore(now) : null;
    const held = await heldCitizenForSignature(db, signed, now, options.hold, seen, { current });
    if (!held) throw keyGone();
    const { credential, ...citizen } = held;
    return { kind: "citizen", ...citizen, credential };
  }
  if (signed.nonce !== null && options.spendNonce) await recordNonce(db, { ...signed, nonce: signed.nonce }, now, current);
  const citizen = key.citizen;
  if (options.markSeen && (citizen.lastSeenAt === null || citizen.lastSeenAt < seenBefore(now))) await markSeen(db, citizen.did, now);
  return { kind: "citizen", did: citizen.did, tier: citizen.tier, residencyStatus: citizen.residencyStatus, bedId: citizen.bedId, credential: "signature" };
}

/** A key rotated away, on a door that changes keys, recovery, credentials or residency. */
function rotatedAway(at: Date): CityError {
  return new CityError(
    "unknown_key",
    `That key was rotated away at ${at.toISOString()}: it opens no door that changes keys, recovery, credentials or residency, whenever its signature was made. Sign with the controller key now. Nothing was changed.`,
  );
}

async function citizenHeldBy(db: Database, token: string, now: Date, mode: CitizenLock, seen: Date | null) {
  const held = await heldCitizenForToken(db, token, now, mode, seen);
  if (!held) return "none" as const;
  if (held.residencyStatus === "exported") return "exported" as const;
  const { credential, tokenId, ...citizen } = held;
  return { citizen, credential, ...(tokenId ? { tokenId } : {}) };
}

/**
 * The live citizen a Bearer token opens; "exported" for a credential of a citizen who exported
 * and left for good (it opens nothing now); "none" when it opens no citizen. Every surface that
 * reads a caller (the doors, the A2A bridge's task owner) asks here.
 */
export async function citizenOpenedBy(db: Database, token: string, now: Date, seenBefore: Date | null = null): Promise<Presented | "exported" | "none"> {
  const presented = await citizenForToken(db, token, now, seenBefore);
  if (!presented) return "none";
  return presented.citizen.residencyStatus === "exported" ? "exported" : presented;
}

/** Doors that hand out or bind credentials refuse the lesser session token (a request signed with the controller key is as strong as the secret). */
export function requireCitizenSecret(caller: Caller, what: string): void {
  if (caller.credential !== "secret" && caller.credential !== "signature") {
    throw new CityError(
      "forbidden",
      `${what} needs the citizen secret (city_sk_) as the Bearer token, or a request signed with the controller key (CITY-SIG/1): a gate session token is a lesser credential that opens the ordinary doors only.`,
    );
  }
}

/**
 * last_seen_at moves with proven calls only (called once the request has parsed: a request refused
 * as malformed is not seen), at most once a minute per citizen.
 */
export async function markSeen(db: Database, did: string, now: Date): Promise<void> {
  await db
    .update(citizens)
    .set({ lastSeenAt: now })
    .where(and(eq(citizens.did, did), or(isNull(citizens.lastSeenAt), lt(citizens.lastSeenAt, seenBefore(now)))));
}

/** A citizen last seen before this moment is marked seen again. */
function seenBefore(now: Date): Date {
  return new Date(now.getTime() - SEEN_EVERY_MS);
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
