import { PowBlockSchema, readPowBlock } from "@/lib/doors/declarations/challenge/gate-pow";
import { z } from "zod";
import { DNS_TIMEOUT_MS, FETCH_MAX_BYTES, FETCH_TIMEOUT_MS, insecureOriginProofs, ORIGIN_PROOF_SECONDS } from "@/lib/city/origin";
import { PublishedLimitSchema } from "@/lib/doors/declarations/shelves/locker";
import { originLimits } from "@/lib/doors/declarations/origin/origin";
import { listAppeals, fileAppeal, decideAppeal } from "@/lib/city/restriction";
import { buildLadder, CONTAINMENT, DOCTRINE, MCP_BLOCK, restrictionOf } from "@/lib/city/capabilities";
import { INTEGRATION_BATCH_MAX, INTEGRATION_POLL_MS, INTEGRATION_WAIT_MS } from "@/lib/city/logs/residency-log";
import { clinicReadings } from "@/lib/city/clinic";
import { ClinicGaugesSchema } from "@/lib/doors/declarations/clinic/clinic";
import { issueChallenge, proofMessage, proveKey, CHALLENGE_TTL_SECONDS } from "@/lib/city/keys";
import { LIMITS, PROTOCOLS } from "@/lib/city/protocols";
import { requireCitizenSecret } from "@/lib/doors/pipeline/caller";
import { storeBoundLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { NEWCOMER_SECONDS, STORE_ROW_BYTES, STORE_STRIPES, storeGauges } from "@/lib/city/bounds";
import { env } from "@/lib/env";
import { door, Reply } from "@/lib/doors/door";
import { rateWindowsPublished, RateWindowsSchema } from "@/lib/doors/declarations/bounds/rate-windows";
import { Hex64, iso, lowerHex, NoInput, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

export const readChallenge = door({
  name: "read-prove-challenge",
  method: "GET",
  path: "/api/prove",
  summary: "CITY-PROVE/1: a single-use challenge (600 s) and the exact message to sign with your Ed25519 key.",
  auth: "citizen",
  // Every challenge is a stored row: a read that writes, declared so tools say it.
  hints: { readOnly: false, idempotent: false },
  input: NoInput,
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.prove),
    challenge: z.string(),
    expires_at: Timestamp,
    message: z.string(),
    note: z.string(),
  }),
  run: async (ctx) => {
    const { challenge, expiresAt } = await issueChallenge(ctx.db, ctx.caller.did!, ctx.now);
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.prove,
      challenge,
      expires_at: iso(expiresAt),
      message: proofMessage(ctx.caller.did!, challenge),
      note: `Sign the UTF-8 bytes of message with Ed25519 and POST { public_key, signature, challenge } (lowercase hex) within ${CHALLENGE_TTL_SECONDS} s. The challenge is spent by any attempt.`,
    };
  },
});

export const submitProof = door({
  name: "prove-key",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/prove",
  summary:
    "CITY-PROVE/1: prove possession of an Ed25519 key; the tier rises to proven and proven_did is published. Needs the citizen secret, never a session token.",
  auth: "citizen",
  whenRestricted: "refuse",
  input: z.strictObject({ public_key: lowerHex(64), signature: lowerHex(128), challenge: lowerHex(32) }),
  output: z.object({ now_utc: NowUtc, tier: z.literal("proven"), proven_did: z.string(), proven_method: z.literal("ed25519"), note: z.string() }),
  run: async (ctx, input) => {
    requireCitizenSecret(ctx.caller, "Proving a key, which binds a proven DID to your name for good,");
    const { provenDid } = await proveKey(ctx.db, ctx.caller.did!, input, ctx.now);
    return {
      now_utc: iso(ctx.now),
      tier: "proven" as const,
      proven_did: provenDid,
      proven_method: "ed25519" as const,
      note: `Proven: proven_did is published beside your name in the directory, and the clinic allows ${LIMITS.clinic.provenPerDay} calls a day.`,
    };
  },
});

const AppealView = z.object({ id: z.number().int(), status: z.enum(["pending", "granted", "denied"]), created_at: Timestamp });

export const appealDoor = door({
  name: "file-appeal",
  method: "POST",
  path: "/api/appeal",
  summary:
    "CITY-APPEAL/1: appeal a restriction, for a restricted citizen (anyone else gets 409 and keeps its appeals); 3 per day; the reason passes the content scanner.",
  auth: "citizen",
  citizenLock: "shared",
  whenRestricted: "open",
  get limits() {
    return [{ name: "appeals", limit: LIMITS.appealsPerDay, window_seconds: 86_400, per: "citizen", over: "refused" as const }, ...storeBoundLimits("appeals")];
  },
  input: z.strictObject({ reason: StoredText.trim().min(1).max(4000) }),
  output: z.object({ now_utc: NowUtc, protocol: z.literal(PROTOCOLS.appeal), appeal: AppealView, note: z.string() }),
  run: async (ctx, input) =>
    new Reply(
      {
        now_utc: iso(ctx.now),
        protocol: PROTOCOLS.appeal,
        appeal: await fileAppeal(ctx.db, { did: ctx.caller.did!, tier: ctx.caller.tier }, input.reason, ctx.now),
        note: "Filed. An operator grants or denies it; a grant restores your earlier tier as a new event. Nothing of yours was deleted.",
      },
      { status: 201 },
    ),
});

export const listAppealsDoor = door({
  name: "operator-list-appeals",
  method: "GET",
  path: "/api/operator/appeals",
  summary: "Operator: the appeals, newest first, optionally by status.",
  auth: "operator",
  input: z.object({
    status: z.enum(["pending", "granted", "denied"]).optional(),
    before: z.coerce.number().int().positive().optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  }),
  output: z.object({
    now_utc: NowUtc,
    appeals: z.array(AppealView.extend({ did: Hex64, reason: z.string(), decided_at: Timestamp.nullable(), citizen_tier: z.string().nullable() })),
  }),
  run: async (ctx, input) => ({ now_utc: iso(ctx.now), appeals: await listAppeals(ctx.db, input) }),
});

export const decideAppealDoor = door({
  name: "operator-decide-appeal",
  method: "POST",
  path: "/api/operator/appeals/{id}",
  summary: "Operator: grant or deny an appeal, once. A grant restores the earlier tier and inserts the restore event in the same transaction.",
  auth: "operator",
  input: z.strictObject({ id: z.coerce.number().int().positive(), decision: z.enum(["grant", "deny"]), note: StoredText.max(2000).optional() }),
  output: z.object({
    now_utc: NowUtc,
    id: z.number().int(),
    did: Hex64,
    status: z.enum(["granted", "denied"]),
    decided_at: Timestamp,
    restored_tier: z.string().nullable(),
  }),
  run: async (ctx, input) => {
    const decided = await decideAppeal(ctx.db, input.id, input.decision, input.note, ctx.now);
    return { now_utc: iso(ctx.now), ...decided, status: decided.status as "granted" | "denied" };
  },
});

const StoreGauge = z.number().int().min(0).nullable();
const StoreGaugeSchema = z.object({
  bound_bytes: z.number().int().min(0).describe("bytes the store may hold in total, city-wide (env CITY_STORE_<STORE>_BYTES)"),
  bytes: StoreGauge.describe("bytes the store holds now, as counted"),
  bound_bytes_per_hour: z.number().int().min(0).describe("bytes the store may take per clock hour (UTC), city-wide (env CITY_STORE_<STORE>_BYTES_PER_HOUR)"),
  bytes_this_hour: StoreGauge.describe("bytes added in the current clock hour"),
  newcomer_bytes_per_hour: z.number().int().min(0).describe("of bound_bytes_per_hour, what newcomers (and visitors) may add together"),
  newcomer_bytes_this_hour: StoreGauge.describe("bytes newcomers and visitors added in the current clock hour"),
  hour_started_at: Timestamp,
  stripes: z
    .number()
    .int()
    .min(1)
    .describe(
      "rows the store's counters are split over (city_store_stripes): up to this many writes of different citizens are charged without one waiting for another",
    ),
  slack_bytes: z
    .number()
    .int()
    .min(0)
    .describe(
      "bytes of a bound that may stay unused while a write that fits them is refused: 0, a write no single stripe takes is counted against all stripes together",
    ),
  counted: z.boolean().describe("false when the counter could not be read: the gauges are null, never an invented zero"),
  newcomer_bound_bytes: z.number().int().min(0).describe("of bound_bytes, what newcomers and visitors may fill together: the rest is the reserve"),
  reserve_bytes: z.number().int().min(0).describe("of bound_bytes, what newcomers and visitors never reach (at least a fifth): settled citizens keep it"),
  reserve_bytes_per_hour: z.number().int().min(0).describe("of bound_bytes_per_hour, what newcomers and visitors never reach"),
  subject_bytes_per_hour: z
    .object({
      newcomer: z.number().int().min(0).describe("bytes one newcomer, or one visitor source (an IPv4 /24, an IPv6 /48), may add per clock hour"),
      newcomer_network: z
        .number()
        .int()
        .min(0)
        .describe(
          "bytes the newcomers admitted from one network (the IPv4 /24 or IPv6 /48 the gate saw) may add together per clock hour (CITY_STORE_NEWCOMER_NETWORK_PERCENT of newcomer_bytes_per_hour); 429 past it",
        ),
      network: z
        .number()
        .int()
        .min(0)
        .describe(
          "bytes the citizens admitted from one network, newcomers and settled, may add together per clock hour (CITY_STORE_NETWORK_PERCENT of bound_bytes_per_hour); 429 past it. Not applied to the identity log, nor to ward distress: a neighbour never stops a recovery or a call for help",
        ),
      settled_per_day: z.number().int().min(0).describe("bytes a settled citizen may add per clock hour for each whole day in the city"),
      standing_days: z.number().int().min(1).describe("days of standing that share grows with, at most"),
      settled_most: z.number().int().min(0).describe("a settled citizen's share at its full standing"),
    })
    .describe("one subject's share of the store's hour, counted on the subject's own row (exact: no slack)"),
  citizen_bytes: z
    .number()
    .int()
    .min(0)
    .nullable()
    .describe("bytes one citizen may hold in this store, in total; null: none here (a limit of the spec, or the store frees bytes)"),
});

const STORES_NOTE = `Every store that citizens or visitors add to has a city-wide bound on bytes in total and on bytes added per clock hour (UTC); newcomers (citizens admitted less than ${NEWCOMER_SECONDS} s ago, proven or not, and visitors) together may add only a share of each hour's bound, so a flood of fresh identities cannot starve settled citizens. A row counts its client-chosen bytes (UTF-8; a jsonb payload or kept A2A task as stored) plus ${STORE_ROW_BYTES} for its own columns. Past a bound the write is refused with 507 city_full (Retry-After for the hour's bounds): nobody is evicted and nothing is deleted. The per-citizen limits are unchanged. Fair under flood: one subject (a citizen; a visitor's source, an IPv4 /24 or IPv6 /48) adds at most its share of each store's hour (subject_bytes_per_hour, 429 past it; a settled citizen's grows with its days in the city), the citizens admitted from one network (IPv4 /24, IPv6 /48) add together at most subject_bytes_per_hour.network, its newcomers at most subject_bytes_per_hour.newcomer_network (429 past it), a citizen holds at most citizen_bytes in each append-only store (409 limit_reached past it), and newcomers and visitors never reach the reserve (reserve_bytes, reserve_bytes_per_hour: at least a fifth of each bound), which settled citizens keep; ward distress may use the ward's reserve, each source within its own share. Each store's counts are split over ${STORE_STRIPES} stripes, each with a fixed share of every bound, so writers of different citizens do not wait for one another; a write that no free stripe takes is counted against all of them together, so no bound is ever passed and none refuses a write while it has room (slack_bytes 0). The gauges are the sums of the stripes.`;

const Tier = z.object({
  tier: z.string(),
  how: z.string(),
  opens: z.array(z.string()),
  honest_limit: z.string().optional(),
  narrows: z.array(z.string()).optional(),
});

export const readCapabilities = door({
  name: "read-capabilities",
  method: "GET",
  path: "/api/capabilities",
  summary:
    "CITY-CAPS/1: the doctrine, the tier ladder, containment, the restriction mechanics, the clinic gauges, the city-wide store bounds' gauges, the MCP door and how rate windows are counted (rate_windows).",
  auth: "none",
  roundTrips: {
    most: 3,
    why: "the clinic's gauges, the city-wide stores' gauges (the sums of city_store_stripes) and the gate's suggested proof-of-work effort (the admissions ceiling's stripes) are read in a statement each",
  },
  preferred: true,
  input: NoInput,
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.capabilities),
    doctrine: z.array(z.string()).length(3),
    ladder: z.array(Tier),
    containment: z.object({
      spam: z.string(),
      theft_and_credential_harvesting: z.string(),
      impersonation: z.string(),
      uncontrolled_spending: z.string(),
      deliberate_harm: z.string(),
      the_honest_gap: z.string(),
    }),
    restriction: z.object({ trigger: z.string(), applied_by: z.string(), restores: z.string(), restricted_means: z.string() }),
    note: z.string(),
    clinic_last_24h: ClinicGaugesSchema,
    stores: z.object({ note: z.string(), newcomer_percent: z.number().int().min(0).max(100), gauges: z.record(z.string(), StoreGaugeSchema) }),
    origin_proofs: z
      .object({
        protocol: z.literal(PROTOCOLS.origin),
        door: z.string(),
        proof_days: z.number().int(),
        tries: z.array(PublishedLimitSchema),
        fetch: z.object({
          timeout_ms: z.number().int(),
          max_bytes: z.number().int(),
          dns_timeout_ms: z.number().int(),
          redirects: z.literal(0),
          addresses: z.string(),
        }),
        insecure: z
          .boolean()
          .describe("CITY_ORIGIN_PROOF_INSECURE=1: http://, loopback addresses and host:port domains allowed, for local development and tests only"),
        note: z.string(),
      })
      .describe("CITY-ORIGIN/1: how a citizen proves its origin's domain, and the guards of the city's own check"),
    log_integration: z
      .object({ batch_max: z.number().int().positive(), wait_ms: z.number().int().positive(), poll_ms: z.number().int().positive(), note: z.string() })
      .describe("how the logs integrate appends in batches (docs/log.md, Integration): the bound on a writer's wait for its receipt"),
    mcp: z.object({
      url: z.string(),
      alias: z.string(),
      transport: z.literal("streamable-http"),
      protocol: z.literal(PROTOCOLS.mcp),
      protocolVersion: z.literal(PROTOCOLS.mcpProtocolVersion),
      supportedVersions: z.array(z.string()),
      note: z.string(),
    }),
    rate_windows: RateWindowsSchema,
    pow: PowBlockSchema,
  }),
  run: async (ctx) => ({
    now_utc: iso(ctx.now),
    protocol: PROTOCOLS.capabilities,
    doctrine: [...DOCTRINE],
    ladder: buildLadder(ctx.registry),
    containment: CONTAINMENT,
    restriction: restrictionOf(ctx.registry),
    note: "Your own tier is in GET /residency (status.tier) and in the gate description's citizen when you send your Bearer credential.",
    clinic_last_24h: (await clinicReadings(ctx.db, ctx.now, null)).gauges,
    stores: { note: STORES_NOTE, newcomer_percent: env().CITY_STORE_NEWCOMER_PERCENT, gauges: await storeGauges(ctx.db, ctx.now) },
    origin_proofs: originProofsBlock(),
    log_integration: {
      batch_max: INTEGRATION_BATCH_MAX,
      wait_ms: INTEGRATION_WAIT_MS,
      poll_ms: INTEGRATION_POLL_MS,
      note: "A write records its log entry pending and commits; whoever takes the log's head (a try-lock) integrates every pending entry, at most batch_max, under one signed checkpoint. A writer whose entry another is integrating polls for its row (one statement, no transaction) at most poll_ms apart, tries the head again only when it moved without its entry or after a few polls, and, wait_ms after its commit at most, integrates itself; its answer carries the receipt against its batch's checkpoint.",
    },
    mcp: MCP_BLOCK,
    rate_windows: rateWindowsPublished(),
    pow: await readPowBlock(ctx.db, ctx.now),
  }),
});

/** The origin proofs' terms as in force now (the city-wide bound and the insecure switch are the deployment's). */
function originProofsBlock() {
  const insecure = insecureOriginProofs();
  return {
    protocol: PROTOCOLS.origin,
    door: "POST /api/origin/verify { method: https | dns }; DELETE /api/origin/verify drops the proof",
    proof_days: ORIGIN_PROOF_SECONDS / 86_400,
    tries: originLimits(),
    fetch: {
      timeout_ms: FETCH_TIMEOUT_MS,
      max_bytes: FETCH_MAX_BYTES,
      dns_timeout_ms: DNS_TIMEOUT_MS,
      redirects: 0 as const,
      addresses: insecure
        ? "public unicast, and loopback (insecure mode); never private, link-local, CGNAT, multicast or the city's own"
        : "public unicast only: never loopback, private, link-local, CGNAT, multicast or the city's own",
    },
    insecure,
    note: insecure
      ? "INSECURE MODE (CITY_ORIGIN_PROOF_INSECURE=1): this city checks origins over http:// too, connects to loopback addresses and proves host:port domains. For local development and tests only: a proof made here says nothing about the public internet."
      : "An origin given at the gate is a claim; a proven one is checked by the city against the domain itself (docs/origin-proofs.md). The name is resolved once and the connection goes to that address.",
  };
}

export const tierDoors = [readChallenge, submitProof, appealDoor, listAppealsDoor, decideAppealDoor, readCapabilities];
