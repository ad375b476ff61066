import { and, eq, gt, isNull } from "drizzle-orm";
import type { Database } from "@/db/client";
import { sessionTokens } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { hashCredential, isCredential, mintCredential } from "./credentials";
import { requireSlot } from "@/lib/city/bounds";

export const TOKEN_TTL = { defaultSeconds: 86_400, minSeconds: 60, maxSeconds: 30 * 86_400 } as const;
export const TOKENS_PER_HOUR = 20;

/** Mints a gate session token (`city_st_`): shown once, stored as sha256, expiring. */
export async function mintSessionToken(db: Database, did: string, ttlSeconds: number, now: Date): Promise<{ token: string; expiresAt: Date }> {
  await requireSlot(db, { scope: "tokens", subject: did, limit: TOKENS_PER_HOUR, windowSeconds: 3600 }, now, "tokens");
  const token = mintCredential("session");
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  await db.insert(sessionTokens).values({ tokenHash: hashCredential(token), did, createdAt: now, expiresAt });
  return { token, expiresAt };
}

/** Revokes the session token presented as Bearer. A citizen secret is not revoked this way. */
export async function revokeSessionToken(db: Database, did: string, bearer: string, now: Date): Promise<{ expiresAt: Date }> {
  if (!isCredential(bearer, "session")) {
    throw new CityError(
      "bad_request",
      "Send the gate session token to revoke as the Bearer token; a citizen secret is replaced with POST /api/recover, not revoked here.",
    );
  }
  const [row] = await db
    .update(sessionTokens)
    .set({ revokedAt: now })
    .where(and(eq(sessionTokens.tokenHash, hashCredential(bearer)), eq(sessionTokens.did, did), isNull(sessionTokens.revokedAt)))
    .returning({ expiresAt: sessionTokens.expiresAt });
  if (!row) throw new CityError("not_found", "That session token is not live.");
  return { expiresAt: row.expiresAt };
}

/** Revokes every live gate session token of the citizen (the citizen secret is untouched). */
export async function revokeAllSessionTokens(db: Database, did: string, now: Date): Promise<number> {
  const rows = await db
    .update(sessionTokens)
    .set({ revokedAt: now })
    .where(and(eq(sessionTokens.did, did), isNull(sessionTokens.revokedAt), gt(sessionTokens.expiresAt, now)))
    .returning({ tokenHash: sessionTokens.tokenHash });
  return rows.length;
}
