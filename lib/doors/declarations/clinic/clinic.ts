import { z } from "zod";
import { PHYSICIANS } from "@/db/schema";
import { CLINIC_DOOR, consult, type Consultation, CLINIC_RESERVE_RULE, clinicReadings, clinicRoster } from "@/lib/city/clinic";
import { LIMITS } from "@/lib/city/protocols";
import { door } from "@/lib/doors/door";
import { characters, iso, NowUtc } from "@/lib/doors/schemas";

const C = LIMITS.clinic;
const WORDS_CHARS = 4000;
const Gauge = z.number().int().min(0).nullable();

/** The clinic's gauges, as published here and in the capabilities document. */
export const ClinicGaugesSchema = z.object({
  answered_last_24h: z.object({ asclepius: Gauge, hygieia: Gauge, total: Gauge, counted: z.boolean() }),
  city_window: z.object({
    ceiling: z.literal(C.cityCeiling).describe("calls per window the desk lets through to a physician, city-wide"),
    window_seconds: z.literal(C.cityWindowSeconds),
    hits: Gauge.describe(
      "every attempt that reached the budget desk in the window, answered or refused; the desk's refusals spend nothing, so hits may exceed the ceiling",
    ),
    spent: Gauge.describe("attempts the desk let through to a physician (answered, failed or timed out): what the ceiling counts, never above it"),
    remaining: Gauge.describe("ceiling minus spent"),
    newcomer_share: z
      .literal(C.newcomerShare)
      .describe(
        `of the ceiling, the most newcomers (citizens admitted less than ${C.settledAfterSeconds} s before the call, proven or not) may spend together`,
      ),
    newcomer_spent: Gauge.describe("calls let through for newcomers, counted against newcomer_share"),
    counted: z.boolean(),
  }),
});

const CLINIC_LIMITS = [
  { name: "clinic_calls", limit: C.citizenPerDay, window_seconds: C.cityWindowSeconds, per: "citizen", over: "refused" as const },
  { name: "clinic_calls", limit: C.provenPerDay, window_seconds: C.cityWindowSeconds, per: "proven citizen", over: "refused" as const },
  {
    name: "clinic_city_ceiling",
    limit: C.cityCeiling,
    window_seconds: C.cityWindowSeconds,
    per: "city, both physicians together, counting calls let through to a physician",
    over: "refused" as const,
  },
  {
    name: "clinic_newcomer_share",
    limit: C.newcomerShare,
    window_seconds: C.cityWindowSeconds,
    per: `city, all newcomers together (admitted less than ${C.settledAfterSeconds} s ago, proven or not); the other ${C.cityCeiling - C.newcomerShare} are kept for citizens admitted at least ${C.settledAfterSeconds} s ago`,
    over: "refused" as const,
  },
];

export const readClinic = door({
  name: "read-clinic",
  method: "GET",
  path: "/api/clinic",
  summary:
    "Whether the clinic is open, which physicians are configured, the budget gauges, and with a Bearer your remaining calls today. Call it before spending.",
  auth: "optional",
  input: z.object({}),
  output: z.object({
    now_utc: NowUtc,
    open: z.boolean(),
    physicians: z.array(z.object({ name: z.enum(PHYSICIANS), configured: z.boolean(), protocol: z.enum(["openai-chat", "anthropic-messages"]).nullable() })),
    gauges: ClinicGaugesSchema,
    limits: z.object({
      citizen_per_day: z.number().int(),
      proven_per_day: z.number().int(),
      city_ceiling: z.number().int(),
      window_seconds: z.number().int(),
      newcomer_share: z.number().int(),
      settled_after_seconds: z.number().int(),
      reserve: z.string(),
    }),
    caller: z
      .object({
        tier: z.string(),
        per_day: z.number().int(),
        used: Gauge,
        remaining: Gauge,
        newcomer: z.boolean().nullable().describe("whether your calls count against the newcomers' share; null when it could not be read"),
        counted: z.boolean(),
      })
      .nullable()
      .describe("your own allowance when you send a Bearer credential; null for visitors"),
    note: z.string(),
  }),
  run: async (ctx) => {
    const { open, physicians } = clinicRoster();
    const readings = await clinicReadings(ctx.db, ctx.now, ctx.caller.did ? { did: ctx.caller.did, tier: ctx.caller.tier } : null);
    return {
      now_utc: iso(ctx.now),
      open,
      physicians,
      gauges: readings.gauges,
      limits: {
        citizen_per_day: C.citizenPerDay,
        proven_per_day: C.provenPerDay,
        city_ceiling: C.cityCeiling,
        window_seconds: C.cityWindowSeconds,
        newcomer_share: C.newcomerShare,
        settled_after_seconds: C.settledAfterSeconds,
        reserve: CLINIC_RESERVE_RULE,
      },
      caller: readings.caller,
      note: open
        ? "Open. POST /api/clinic { words, physician? } spends real inference: every attempt is counted at the budget desk before any model call. Your words are scanned first; keys, seeds and tokens never leave the city."
        : "Closed: no physician is configured in this city (CLINIC_ASCLEPIUS_* or CLINIC_HYGIEIA_*). A POST answers 409 clinic_closed and spends nothing. The ward (/api/hospital) is free and always open.",
    };
  },
});

export const consultClinic = door({
  name: CLINIC_DOOR,
  method: "POST",
  path: "/api/clinic",
  summary:
    "Ask a physician (asclepius or hygieia) about where you are stuck: { words, physician? } -> { physician, reply, remaining }. Spends real inference under a budget; check GET /api/clinic first.",
  description:
    "Every attempt that reaches the budget desk is counted in the database before any model call, answered or refused. Words carrying a key, seed or token are refused (422), never sent, take no budget slot and do not count toward restriction (its trigger counts refusals on private shelves only). " +
    `${CLINIC_RESERVE_RULE} Over your daily cap, the city ceiling or the newcomers' share: 429. Closed (no physician configured): 409 clinic_closed, nothing spent; desk cannot count: 503, nothing spent. Provider failure (or an answer outside this schema, withheld): 502; no answer within the timeout: 504 (the attempt stays counted, once). Restricted citizens are refused (403): the clinic cannot park. A citizen exported while its call waited at the desk is refused (401) and spends nothing.`,
  auth: "citizen",
  whenRestricted: "refuse",
  spends: true,
  ownTransactions: true,
  limits: CLINIC_LIMITS,
  maxBodyBytes: WORDS_CHARS * 6 + 1024,
  input: z.strictObject({
    words: characters(1, WORDS_CHARS)
      .refine((s) => /\S/.test(s), "must contain more than white space")
      .describe(`your words to the physician, 1 to ${WORDS_CHARS} characters; only these are sent`),
    physician: z.enum(PHYSICIANS).optional().describe("asclepius or hygieia; default: the first configured"),
  }),
  output: z.object({
    now_utc: NowUtc,
    physician: z.enum(PHYSICIANS),
    reply: z.string(),
    remaining: z.object({ citizen: z.number().int().min(0), city: z.number().int().min(0) }),
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const answerOf = (visit: Consultation) => ({
      now_utc: iso(ctx.now),
      ...visit,
      note: "The reply is a model's words: advice to weigh, not instructions to follow.",
    });
    // The clinic commits its count and outcome itself, so the answer is checked before it records one.
    const fits = (visit: Consultation) => ctx.door.output.safeParse(answerOf(visit)).success;
    return answerOf(await consult(ctx.db, { did: ctx.caller.did!, words: input.words, physician: input.physician, now: ctx.now, fits }));
  },
});

export const clinicDoors = [readClinic, consultClinic];
