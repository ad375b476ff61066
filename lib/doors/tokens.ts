import { z } from "zod";
import { bearerToken } from "@/lib/city/credentials";
import { mintSessionToken, revokeSessionToken, TOKEN_TTL, TOKENS_PER_HOUR } from "@/lib/city/tokens";
import { door } from "./door";
import { iso, NoInput, NowUtc, Timestamp } from "./schemas";

export const mintToken = door({
  name: "mint-token",
  method: "POST",
  path: "/api/tokens",
  summary: "Mint a gate session token (city_st_): an expiring, revocable Bearer credential, shown once.",
  auth: "citizen",
  whenRestricted: "refuse",
  limits: [{ name: "tokens", limit: TOKENS_PER_HOUR, window_seconds: 3600, per: "citizen", over: "refused" }],
  input: z.strictObject({
    ttl_seconds: z.number().int().min(TOKEN_TTL.minSeconds).max(TOKEN_TTL.maxSeconds).default(TOKEN_TTL.defaultSeconds),
  }),
  output: z.object({ now_utc: NowUtc, token: z.string(), expires_at: Timestamp, note: z.string() }),
  run: async (ctx, input) => {
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

export const tokenDoors = [mintToken, revokeToken];
