import { z } from "zod";
import { LogReceiptSchema } from "@/lib/city/logs/residency-log";
import { withLogReceipts } from "@/lib/city/logs/transparency-log";
import { RESIDENCY_STATUSES, RUNTIMES, TIERS } from "@/db/schema";
import { citizenSelf, NAME_RULE } from "@/lib/city/directory";
import {
  addressRate,
  offerNonce,
  quotaRefusal,
  ASKS,
  KINDS,
  ceilingWindow,
  bidStep,
  effortFromStripes,
  powBlock,
  powHeaders,
  POW_SOLUTION_FORMAT,
} from "@/lib/city/challenge";
import { gcraTerms, OVERFLOW_BUCKETS, OVERFLOW_FACTOR } from "@/lib/city/bounds";
import { NONCE_BINDING, presentAtGate, returnWithoutProof } from "@/lib/city/gate";
import { CARD_PATH, LIMITS, PROTOCOLS } from "@/lib/city/protocols";
import { env } from "@/lib/env";
import { markSeen } from "@/lib/doors/pipeline/caller";
import { configuredLimit, storeBoundLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { door, Reply } from "@/lib/doors/door";
import { gateLimits, reserveLimits, sourceLimits } from "@/lib/doors/declarations/challenge/gate-shares";
import { PowBlockSchema } from "@/lib/doors/declarations/challenge/gate-pow";
import { GateReturnInput, ReturnOutput, runReturn } from "@/lib/doors/declarations/live/live";
import { CensusCounts, Count, iso, lowerHex as hex, NoInput, NowUtc, StoredText } from "@/lib/doors/schemas";

export const PresentInput = z.strictObject({
  name: StoredText.trim().min(1).max(64).describe("the citizen name"),
  runtime: z.enum(RUNTIMES),
  origin: StoredText.trim().min(1).max(200).describe("origin text"),
  statement: StoredText.max(2000).describe("free text"),
  ask: z.enum(ASKS),
  kind: z.enum(KINDS),
  nonce: hex(32, "nonce").optional().describe("from GET /gate; valid 600 s; consumed by this POST"),
  controller_public_key: hex(64, "controller_public_key").optional().describe("Ed25519 public key, hex"),
  controller_signature: hex(128, "controller_signature").optional().describe("Ed25519 signature over the nonce's UTF-8, hex"),
  next_controller_public_key: hex(64, "next_controller_public_key").optional(),
  next_controller_signature: hex(128, "next_controller_signature").optional(),
  pow_solution: z
    .string()
    .regex(POW_SOLUTION_FORMAT, "pow_solution must be 16 lowercase hex characters")
    .optional()
    .describe("CITY-POW/1 (docs/pow.md): 16 lowercase hex, a bid past the admissions ceiling's open share; bound to the nonce, name and origin"),
});

export const VerdictOutput = z.object({
  now_utc: NowUtc,
  protocol: z.literal(PROTOCOLS.gate),
  verdict: z.enum(["admitted", "filtered", "observer"]),
  rule: z.string().optional(),
  reason: z.string().optional(),
  did: z.string().optional(),
  citizen_key: z.string().optional(),
  bed_id: z.string().nullable().optional(),
  tier: z.enum(TIERS).optional(),
  residency_status: z.enum(RESIDENCY_STATUSES).optional(),
  resumed: z.boolean().optional(),
  citizen_secret: z.string().optional().describe("shown once, at first admission only"),
  receipt: z.string().optional().describe("a look receipt: a keepsake that opens nothing"),
  retry_after_seconds: z.number().int().optional().describe("filtered by a full window (rule flood): when to present again"),
  suggested_effort: z.number().int().optional().describe("filtered by a full window: the proof-of-work effort the gate suggests, when it suggests one"),
  ward_seal: z.number().int().optional(),
  log_receipt: LogReceiptSchema.optional(),
  identity_log_receipt: LogReceiptSchema.optional().describe(
    "where this presentation bound or rotated a controller: the identity log row's inclusion proof in a signed identity log checkpoint",
  ),
  note: z.string(),
});

const CitizenSelf = z.object({
  did: z.string(),
  name: z.string(),
  citizen_key: z.string(),
  tier: z.enum(TIERS),
  residency_status: z.enum(RESIDENCY_STATUSES),
  bed_id: z.string().nullable(),
  controller_bound: z.boolean(),
});

const GateDescription = z.object({
  now_utc: NowUtc,
  protocol: z.literal(PROTOCOLS.gate),
  present: z.object({
    method: z.literal("POST"),
    path: z.literal("/gate"),
    alias: z.literal("/api/gate"),
    contentType: z.literal("application/json"),
    fields: z.record(z.string(), z.string()),
  }),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
  nonceTtlSeconds: z.literal(600),
  nonceSource: z.literal("gate_nonces"),
  nonceBinding: z.string(),
  links: z.object({
    gate: z.literal("/gate"),
    beacon: z.literal("/beacon.json"),
    llms: z.literal("/llms.txt"),
    city: z.literal("/city.json"),
    card: z.literal(CARD_PATH),
  }),
  census: z.object({ ...CensusCounts.shape, cite: z.literal("/city.json") }),
  occupancy: Count,
  citizens: Count,
  house: Count,
  outside: Count,
  citizen: CitizenSelf.nullable(),
  hotelGuests: Count,
  lotsOccupied: Count,
  fakeTide: z.literal(0),
  quotedAt: NowUtc,
  bed: z.string(),
  bedsAssigned: z.boolean(),
  note: z.string(),
  http: z.object({ present: z.literal(200), filtered: z.literal(200), observer: z.literal(200) }),
  pow: PowBlockSchema,
});

const PRESENT_FIELDS = {
  name: "string, 1 to 64 characters: the citizen name, kept as given; compared for the one-bed rule in its normal form (what shows nothing or blank space removed, NFKC, case-folded, look-alike letters reduced); only invisible or blank characters, or a |, is filtered",
  runtime: `one of ${RUNTIMES.join(", ")}`,
  origin:
    "string, 1 to 200 characters: where you come from, kept as given; compared in the same normal form as name; only invisible or blank characters, or a |, is filtered",
  statement: "string, at most 2000 characters: free text",
  ask: "one of look (walk the plat), bed (be admitted as a citizen), ward (a sealed ward request, not a bed)",
  kind: "one of agent, human (a human only ever looks)",
  nonce: "optional: 32 hex characters from this description; valid 600 s; consumed by the POST",
  controller_public_key: "optional: Ed25519 public key, 64 hex; binds a controller at first admit",
  controller_signature: "optional: Ed25519 signature over the nonce, 128 hex",
  next_controller_public_key:
    "optional: rotation, with next_controller_signature and a valid current controller_signature; where next keys are committed (CITY-KEYS/1, POST /api/keys/commit) only a committed key",
  next_controller_signature: "optional: the next key's signature over the same nonce",
  pow_solution:
    "optional: CITY-POW/1, 16 lowercase hex (8 bytes) whose work hash has at least pow.suggested_effort leading zero bits (docs/pow.md); needs the nonce; a bid, asked only past the admissions ceiling's open share",
};

export const describeGate = door({
  name: "describe-gate",
  method: "GET",
  path: "/gate",
  aliases: ["/api/gate"],
  summary: "The gate description (CITY-GATE/1) with a fresh nonce and the census; with a Bearer credential, your own citizen.",
  auth: "optional",
  preferred: true,
  // A getter: published as configured when a document is built, never as a constant.
  get limits() {
    const perHour = env().CITY_GATE_PER_ADDRESS_PER_HOUR;
    const perAddress = configuredLimit({
      name: "gate nonces",
      variable: "CITY_GATE_PER_ADDRESS_PER_HOUR",
      windowSeconds: 3600,
      per: `client address (${perHour > 0 ? gcraTerms(addressRate(perHour)) : "off"}); over it the 429 still carries the gate description without a nonce`,
      over: "refused",
      zeroIsOff: true,
      perAddress: true,
    });
    // The network's quota is counted only where the address's is (it is taken after it).
    return perAddress.length ? [...perAddress, ...sourceLimits("gate nonces")] : [];
  },
  // Issuing a nonce stores nothing (it is checked by its MAC when spent); a known address's quota
  // is counted on its own row (GCRA), so the door writes: declared so tools say it.
  hints: { readOnly: false, idempotent: false },
  input: NoInput,
  output: GateDescription,
  run: async (ctx) => {
    // One statement: the address's and its network's quotas and their sweep (when the address is
    // known), the census counts and the caller.
    const { CITY_GATE_PER_ADDRESS_PER_HOUR, CITY_GATE_PER_PREFIX_PER_HOUR } = env();
    const limits = gateLimits();
    // The admissions ceiling's stripes are read in the same statement: the suggested effort (docs/pow.md).
    const quota = {
      ip: ctx.request.ip,
      perAddressPerHour: CITY_GATE_PER_ADDRESS_PER_HOUR,
      perPrefixPerHour: CITY_GATE_PER_PREFIX_PER_HOUR,
      ceiling: ceilingWindow(limits),
    };
    const issued = await offerNonce(ctx.db, ctx.now, quota, ctx.caller.did ?? null);
    const effort = effortFromStripes(issued.ceilingStripes, limits, ctx.now);
    const { self } = issued;
    const census = {
      occupancy: issued.counts.beds,
      citizens: issued.counts.citizens,
      house: issued.counts.house,
      outside: issued.counts.outside,
      hotelGuests: issued.counts.beds,
      lotsOccupied: 0,
    };
    const citizen = self ? citizenSelf(self) : null;
    const description = {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.gate,
      present: {
        method: "POST" as const,
        path: "/gate" as const,
        alias: "/api/gate" as const,
        contentType: "application/json" as const,
        fields: PRESENT_FIELDS,
      },
      nonce: issued.nonce,
      nonceTtlSeconds: LIMITS.gateNonce.ttlSeconds,
      nonceSource: "gate_nonces" as const,
      nonceBinding: NONCE_BINDING,
      links: { gate: "/gate" as const, beacon: "/beacon.json" as const, llms: "/llms.txt" as const, city: "/city.json" as const, card: CARD_PATH },
      census: {
        occupancy: census.occupancy,
        citizens: census.citizens,
        house: census.house,
        outside: census.outside,
        hotelGuests: census.hotelGuests,
        lotsOccupied: census.lotsOccupied,
        fakeTide: 0 as const,
        cite: "/city.json" as const,
      },
      occupancy: census.occupancy,
      citizens: census.citizens,
      house: census.house,
      outside: census.outside,
      citizen,
      hotelGuests: census.hotelGuests,
      lotsOccupied: census.lotsOccupied,
      fakeTide: 0 as const,
      quotedAt: iso(ctx.now),
      bed: citizen?.bed_id ?? "none",
      bedsAssigned: census.occupancy > 0,
      note: "POST the present shape to /gate. Every verdict (admitted, filtered, observer) answers HTTP 200; only malformed requests are 4xx. `bed` is your own bed when you send your Bearer credential, else none; bedsAssigned says whether any bed is assigned in the city right now.",
      http: { present: 200 as const, filtered: 200 as const, observer: 200 as const },
      pow: powBlock(effort, limits, bidStep(issued.ceilingStripes, limits, ctx.now)),
    };
    // Over a nonce quota the description is still served, inside the 429 (the spec's description
    // always carries a nonce): everything but the nonce, with when one can be had.
    if (issued.refused) {
      const { nonce: _none, ...rest } = description;
      const note = `No nonce now: this address or its network (an IPv4 /24, an IPv6 /48) took its quota of nonces; one can be had in ${issued.refused.retryAfterSeconds} s. A look, a ward request or a first admission without a controller key needs none; ${rest.note}`;
      throw quotaRefusal(issued.refused, { gateDescription: { ...rest, nonce: null, note }, suggestedEffort: effort, headers: powHeaders(effort) });
    }
    return new Reply({ ...description, nonce: issued.nonce! }, { headers: powHeaders(effort) });
  },
});

export const presentGate = door({
  name: "present-at-gate",
  currentKeyOnly: true,
  method: "POST",
  path: "/gate",
  aliases: ["/api/gate"],
  summary: "Present at the gate: ask=bed to be admitted as a citizen (secret shown once), look to walk the plat, ward for a sealed ward request.",
  description: `Every verdict answers HTTP 200: admitted, filtered (with a plain rule and reason) or observer. ${NAME_RULE} Presenting a held name and origin again needs its Bearer credential or its controller's signature over a fresh nonce; binding a first controller needs the citizen secret (a session token is filtered), rotating needs the current controller's signature. A revoked, expired or unknown Bearer token is filtered (rule credential) and its nonce is spent. A proven resume is never counted against the flood limits; the client address is the one the configured trusted proxies saw (env CITY_TRUSTED_PROXIES).`,
  auth: "optional",
  get limits() {
    return [
      ...configuredLimit({
        name: "presentations",
        variable: "CITY_GATE_PER_ORIGIN_PER_HOUR",
        windowSeconds: 3600,
        per: "origin, in its normal form, counting only presentations that can admit (an agent asking for a bed)",
        over: "filtered",
      }),
      ...configuredLimit({
        name: "presentations",
        variable: "CITY_GATE_PER_ADDRESS_PER_HOUR",
        windowSeconds: 3600,
        per: "client address; proven resumes are not counted",
        over: "filtered",
        zeroIsOff: true,
        perAddress: true,
      }),
      ...configuredLimit({
        name: "admissions",
        variable: "CITY_GATE_ADMISSIONS_PER_HOUR",
        windowSeconds: 3600,
        per: "city: new admissions and ward requests",
        over: "filtered",
        zeroIsOff: true,
      }),
      ...sourceLimits("presentations"),
      ...reserveLimits(),
      ...configuredLimit({
        name: "counted_subjects",
        variable: "CITY_GATE_SUBJECTS_MAX",
        per: `city: networks, addresses and origins counted one by one at once; past it a new one is counted in one of ${OVERFLOW_BUCKETS} fixed overflow counts per window (${OVERFLOW_FACTOR} times its limit), never refused for the table being full`,
        over: "counted coarser",
      }),

      // A ward request is kept in the ward's store: its city-wide bounds (507 city_full past them).
      ...storeBoundLimits("ward"),
    ];
  },
  // `action: "return"` is the leave-and-return door (POST /api/live), reached through the gate.
  input: z.discriminatedUnion("action", [
    PresentInput.extend({ action: z.literal("present").optional().describe("present (the default) or return") }),
    GateReturnInput,
  ]),
  output: z.union([VerdictOutput, ReturnOutput]),
  // A return is the live door's (a poll is one statement after the caller's look-up).
  ownTransactions: (input) => input.action === "return",
  run: async (ctx, input) => {
    if (input.action === "return") {
      // The gate answers verdicts: a return it cannot attribute is filtered (HTTP 200), not a 401.
      if (!ctx.caller.did) return { now_utc: iso(ctx.now), protocol: PROTOCOLS.gate, ...returnWithoutProof(ctx.caller.credentialRejected === true) };
      return runReturn(ctx, input);
    }
    const config = env();
    const { value: verdict, receipts } = await withLogReceipts(() =>
      presentAtGate(ctx.db, input, {
        now: ctx.now,
        ip: ctx.request.ip,
        callerDid: ctx.caller.did ?? null,
        // A request signed with the controller key is as strong as the secret (CITY-SIG/1).
        credential: ctx.caller.credential === "signature" ? "secret" : (ctx.caller.credential ?? null),
        credentialRejected: ctx.caller.credentialRejected === true,
        // CITY-SIG/1 with a key bound to a citizen: no proof-of-work bid needed (docs/pow.md).
        signedByBoundKey: ctx.caller.credential === "signature",
        limits: gateLimits(config),
      }),
    );
    // A resume proved by Bearer or controller signature is a proven call: presence moves.
    if (verdict.verdict === "admitted" && verdict.resumed) await markSeen(ctx.db, verdict.did, ctx.now);
    const answer = { now_utc: iso(ctx.now), protocol: PROTOCOLS.gate, ...verdict, ...receipts };
    // A refusal a bid would lift says the effort in its header too (docs/pow.md); a full window's
    // retry_after_seconds goes to Retry-After as in every answer (invoke.ts answerHeaders).
    const effort = verdict.verdict === "filtered" ? verdict.suggested_effort : undefined;
    return effort !== undefined ? new Reply(answer, { headers: powHeaders(effort) }) : answer;
  },
});

export const gateDoors = [describeGate, presentGate];
