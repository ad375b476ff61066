import { z } from "zod";
import { ORIGIN_METHODS } from "@/db/schema";
import {
  FETCH_MAX_BYTES,
  FETCH_TIMEOUT_MS,
  DNS_TIMEOUT_MS,
  dropOrigin,
  ORIGIN_PROOF_SECONDS,
  ORIGIN_TRIES,
  originSourceShare,
  verifyOrigin,
} from "@/lib/city/origin";
import { env } from "@/lib/env";
import { PROTOCOLS } from "@/lib/city/protocols";
import { requireCitizenSecret } from "@/lib/doors/pipeline/caller";
import { addressMode } from "@/lib/doors/pipeline/client-address";
import { configuredLimit } from "@/lib/doors/declarations/bounds/configured-limits";
import { door, type PublishedLimit } from "@/lib/doors/door";
import { IdentityReceipt } from "@/lib/doors/declarations/keys/keys";
import { Hex64, iso, NowUtc, Timestamp } from "@/lib/doors/schemas";

/** A citizen's origin proof as every directory row and /peers/{did} carry it (CITY-ORIGIN/1). */
export const OriginProofSchema = z
  .strictObject({
    domain: z.string().describe("the domain proven: the host of the citizen's origin, lowercase, IDNA to ASCII"),
    method: z.enum(ORIGIN_METHODS).describe("https: the file /.well-known/city-did; dns: the TXT record _city.<domain>"),
    verified_at: Timestamp,
    expires_at: Timestamp.describe(`verified_at + ${ORIGIN_PROOF_SECONDS / 86_400} days; once past, the proof is lapsed (shown so) until verified again`),
  })
  .describe("CITY-ORIGIN/1: proof that the citizen speaks for its origin's domain; null: its origin is only claimed");

export function originLimits(): PublishedLimit[] {
  const hour = ORIGIN_TRIES.windowSeconds;
  const share = originSourceShare();
  return [
    { name: "origin_tries_per_citizen", limit: ORIGIN_TRIES.perCitizen, window_seconds: hour, per: "citizen", over: "refused" },
    { name: "origin_tries_per_domain", limit: ORIGIN_TRIES.perDomain, window_seconds: hour, per: "domain (whoever asks)", over: "refused" },
    // Counted per client address's network: not in force (so not published) where addresses are unknown.
    ...(addressMode() !== 0 && share !== null
      ? [
          {
            name: "origin_tries_per_source",
            limit: share,
            window_seconds: hour,
            per: `source: the client address's IPv4 /24 or IPv6 /48, its share of CITY_ORIGIN_PROOFS_PER_HOUR (env CITY_ORIGIN_SOURCE_SHARE_PERCENT, ${env().CITY_ORIGIN_SOURCE_SHARE_PERCENT}%)`,
            over: "refused" as const,
          },
        ]
      : []),
    ...configuredLimit({ name: "origin_tries_city", variable: "CITY_ORIGIN_PROOFS_PER_HOUR", windowSeconds: hour, per: "city", over: "refused" }),
  ];
}

const PROOFS_TEXT = `HTTPS: GET https://<domain>/.well-known/city-did must answer 200, text/plain, at most ${FETCH_MAX_BYTES} bytes, with a line that is exactly your DID (one DID a line: one file may list every citizen of an operator). DNS: a TXT record at _city.<domain> whose value is exactly did=<your DID> (one record per citizen).`;

export const verifyOriginDoor = door({
  name: "verify-origin",
  method: "POST",
  path: "/api/origin/verify",
  summary: `${PROTOCOLS.origin}: prove that you speak for your origin's domain, by a file over HTTPS or a DNS TXT record, checked at once; the directory then shows your origin as proven for ${ORIGIN_PROOF_SECONDS / 86_400} days.`,
  description: `Your domain is the host of the origin you gave at the gate (a DNS name, or a URL's host), lowercase, IDNA to ASCII; an origin that is not one cannot be proven (422). ${PROOFS_TEXT} Needs your citizen secret or a request signed with your controller key; a gate session token is refused (403). The city resolves the name once with its own DNS client (${DNS_TIMEOUT_MS / 1000} s), connects only to a public unicast address it got, follows no redirect, reads at most ${FETCH_MAX_BYTES} bytes and gives up after ${FETCH_TIMEOUT_MS / 1000} s. Proven: 200 with origin_proof and an identity log row (origin-proven). Not proven: 422 origin_unverified whose origin_check says what the city looked at, what it found (status, bytes, the lines or records read, capped) and what it expected; nothing is changed then, and a proof already recorded stays until its expires_at. Every try counts, proven or not: ${ORIGIN_TRIES.perCitizen} an hour per citizen, ${ORIGIN_TRIES.perDomain} per domain, a share of the city-wide bound per client network (an IPv4 /24 or IPv6 /48, where addresses are known), and the city-wide bound (429 past any).`,
  brief: `Prove your origin's domain: { method: "https" | "dns" }. ${PROOFS_TEXT}`,
  auth: "citizen",
  whenRestricted: "refuse",
  // The count commits before the city looks, and no transaction or lock is held while it looks.
  ownTransactions: true,
  hints: { idempotent: false },
  problems: ["origin_unverified"],
  get limits() {
    return originLimits();
  },
  input: z.strictObject({ method: z.enum(ORIGIN_METHODS).describe("https: the file /.well-known/city-did; dns: the TXT record _city.<domain>") }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.origin),
    did: Hex64,
    origin_proof: OriginProofSchema,
    looked_at: z.string().describe("the URL fetched or the TXT name asked"),
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    requireCitizenSecret(ctx.caller, "Proving an origin");
    const verified = await verifyOrigin(ctx.db, ctx.caller.did!, input.method, ctx.now, ctx.request.ip);
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.origin,
      did: ctx.caller.did!,
      origin_proof: verified.proof,
      looked_at: verified.lookedAt,
      identity_log_receipt: verified.receipt,
      note: `Proven: the directory, /peers/${ctx.caller.did} and the plat show ${verified.proof.domain} as proven by ${verified.proof.method} until ${verified.proof.expires_at}; after that it shows as lapsed until you verify again (keep the ${input.method === "https" ? "file" : "record"} in place and call this door before then).`,
    };
  },
});

export const dropOriginDoor = door({
  name: "drop-origin-proof",
  method: "DELETE",
  path: "/api/origin/verify",
  summary: `${PROTOCOLS.origin}: drop your origin proof (standing or lapsed); the directory then shows your origin as claimed. Recorded in the identity log (origin-dropped).`,
  description:
    "Needs your citizen secret or a request signed with your controller key; a gate session token is refused (403). With no proof recorded nothing changes (dropped: null) and no log row is written.",
  auth: "citizen",
  whenRestricted: "open",
  input: z.strictObject({}),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.origin),
    did: Hex64,
    origin_proof: z.null(),
    dropped: OriginProofSchema.nullable().describe("the proof dropped; null: there was none"),
    identity_log_receipt: IdentityReceipt.nullable(),
    note: z.string(),
  }),
  run: async (ctx) => {
    requireCitizenSecret(ctx.caller, "Dropping an origin proof");
    const { dropped, receipt } = await dropOrigin(ctx.db, ctx.caller.did!, ctx.now);
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.origin,
      did: ctx.caller.did!,
      origin_proof: null,
      dropped,
      identity_log_receipt: receipt,
      note: dropped ? `Dropped: ${dropped.domain} now shows as claimed, not proven.` : "No origin proof was recorded: nothing changed.",
    };
  },
});

export const originDoors = [verifyOriginDoor, dropOriginDoor];
