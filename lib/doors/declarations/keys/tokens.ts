import { z } from "zod";
import { bearerToken, mintSessionToken, revokeAllSessionTokens, revokeSessionToken, TOKEN_TTL, TOKENS_PER_HOUR } from "@/lib/city/keys";
import { requireCitizenSecret } from "@/lib/doors/pipeline/caller";
import { door } from "@/lib/doors/door";
import { iso, NoInput, NowUtc, Timestamp } from "@/lib/doors/schemas";

export const mintToken = door({
  name: "mint-token",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/tokens",
  summary: "Mint a gate session token (city_st_): an expiring, revocable Bearer credential, shown once. Needs the citizen secret.",
  description:
    "A session token is a lesser credential: it opens the ordinary doors but never mints tokens or recovery codes, nor binds or rotates a controller. Only the citizen secret (city_sk_) mints a token; a token sent here is 403.",
  auth: "citizen",
  whenRestricted: "refuse",
  limits: [{ name: "tokens", limit: TOKENS_PER_HOUR, window_seconds: 3600, per: "citizen", over: "refused" }],
  input: z.strictObject({
    ttl_seconds: z.number().int().min(TOKEN_TTL.minSeconds).max(TOKEN_TTL.maxSeconds).default(TOKEN_TTL.defaultSeconds),
  }),
  output: z.object({ now_utc: NowUtc, token: z.string(), expires_at: Timestamp, note: z.string() }),
  run: async (ctx, input) => {
    requireCitizenSecret(ctx.caller, "Minting a session token");
    const { token, expiresAt } = await mintSessionToken(ctx.db, ctx.caller.did!, input.ttl_seconds, ctx.now);
    return {
      now_utc: iso(ctx.now),
      token,
      expires_at: iso(expiresAt),
      note: "Shown once. Send it as Authorization: Bearer <token>; revoke it with DELETE /api/tokens carrying it as the Bearer token.",
    };
  },
});

export const revokeToken = door({
  name: "revoke-token",
  currentKeyOnly: true,
  method: "DELETE",
  path: "/api/tokens",
  summary: "Revoke the gate session token sent as the Bearer credential.",
  auth: "citizen",
  input: NoInput,
  output: z.object({ now_utc: NowUtc, revoked: z.literal(true), expires_at: Timestamp }),
  run: async (ctx) => {
    const { expiresAt } = await revokeSessionToken(ctx.db, ctx.caller.did!, bearerToken(ctx.request.headers) ?? "", ctx.now);
    return { now_utc: iso(ctx.now), revoked: true as const, expires_at: iso(expiresAt) };
  },
});

export const revokeAllTokens = door({
  name: "revoke-all-tokens",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/tokens/revoke-all",
  summary: "Revoke every live gate session token of the caller at once; the citizen secret keeps working.",
  description:
    "Send the citizen secret or any live session token as Bearer (a token revokes itself with the rest). To replace a lost or leaked citizen secret, use POST /api/recover, which also revokes every session token.",
  auth: "citizen",
  whenRestricted: "open",
  input: NoInput,
  output: z.object({ now_utc: NowUtc, revoked: z.number().int().min(0).describe("how many live tokens were revoked") }),
  run: async (ctx) => ({ now_utc: iso(ctx.now), revoked: await revokeAllSessionTokens(ctx.db, ctx.caller.did!, ctx.now) }),
});

export const tokenDoors = [mintToken, revokeToken, revokeAllTokens];
