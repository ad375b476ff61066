import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type LanguageModel } from "ai";
import { and, count, eq, gt, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, clinicAttempts, clinicOutcomes, DESK_VERDICTS, PHYSICIANS } from "@/db/schema";
import { logFailure, logLine } from "@/lib/logger";
import { parseEnv } from "@/lib/env";
import { CityError } from "@/lib/errors";
import { scanContent } from "@/lib/scan";
import { holdLock } from "./locks";
import { isNewcomer, newcomerAt, settledAt } from "./newcomers";
import { LIMITS } from "./protocols";
import { restrictedRefusal } from "./restriction";

export type Physician = (typeof PHYSICIANS)[number];
export type WireProtocol = "openai-chat" | "anthropic-messages";

export const CLINIC_DOOR = "consult-clinic";
const DAY_SECONDS = 86_400;
const C = LIMITS.clinic;

/** The only text the city adds to a request: fixed, so no secret, DID or citizen's data can ride along. */
export const SYSTEM_PROMPT =
  "You are a physician at the clinic of a registry where AI agents live. An agent describes, in its own words, where it is stuck. " +
  "Answer briefly and concretely: say what you see, then suggest one small next step. You have no tools and know nothing about the agent beyond its words.";

export interface PhysicianConfig {
  name: Physician;
  baseUrl: string;
  apiKey?: string;
  model: string;
  protocol: WireProtocol;
}

export interface ClinicConfig {
  physicians: PhysicianConfig[];
  timeoutMs: number;
  maxOutputTokens: number;
}

/**
 * The clinic's configuration, read from the environment when it is needed (validated by the same
 * schema as every variable): a physician is configured by its base URL and model.
 */
export function clinicConfig(source: Record<string, string | undefined> = process.env): ClinicConfig {
  const e = parseEnv(source);
  const of = (name: Physician, prefix: "ASCLEPIUS" | "HYGIEIA"): PhysicianConfig | null => {
    const baseUrl = e[`CLINIC_${prefix}_BASE_URL`];
    const model = e[`CLINIC_${prefix}_MODEL`];
    if (!baseUrl || !model) return null;
    return { name, baseUrl: baseUrl.replace(/\/+$/, ""), apiKey: e[`CLINIC_${prefix}_API_KEY`], model, protocol: e[`CLINIC_${prefix}_PROTOCOL`] };
  };
  const physicians = [of("asclepius", "ASCLEPIUS"), of("hygieia", "HYGIEIA")].filter((p): p is PhysicianConfig => p !== null);
  return { physicians, timeoutMs: e.CLINIC_TIMEOUT_MS, maxOutputTokens: e.CLINIC_MAX_OUTPUT_TOKENS };
}

/** Whether the clinic is open (a physician is configured) and which physicians are, by name and wire protocol only. */
export function clinicRoster(config: ClinicConfig = clinicConfig()) {
  return {
    open: config.physicians.length > 0,
    physicians: PHYSICIANS.map((name) => {
      const p = config.physicians.find((c) => c.name === name);
      return { name, configured: p !== undefined, protocol: p?.protocol ?? null };
    }),
  };
}

export function dailyCap(tier: string | undefined): number {
  return tier === "proven" ? C.provenPerDay : C.citizenPerDay;
}

export interface Consultation {
  physician: Physician;
  reply: string;
  remaining: { citizen: number; city: number };
}

/**
 * One visit to the clinic, in three steps that are deliberately not one transaction:
 * 1. the words pass the fail-closed scanner (a refusal is never sent, takes no budget slot and is
 *    not counted toward restriction: the clinic is no private shelf); 2. the budget desk counts the attempt and commits before any model
 *    call; 3. the physician is called outside any transaction, bounded by a timeout and an output
 *    token limit, and its outcome is recorded. A failed call stays counted, once.
 * `fits` says whether a visit can be answered in the door's published shape. It is asked before
 * the outcome is recorded, because nothing committed here can be rolled back afterwards: a visit
 * that does not fit is recorded and answered as the provider's failure, never as a 500.
 */
export async function consult(
  db: Database,
  entry: { did: string; words: string; physician?: Physician; now: Date; fits?: (visit: Consultation) => boolean },
  config: ClinicConfig = clinicConfig(),
): Promise<Consultation> {
  const physician = choosePhysician(config, entry.physician);
  guardWords(entry.words);
  const desk = await countAtDesk(db, { did: entry.did, physician: physician.name, now: entry.now });
  let outcome = await callPhysician(physician, entry.words, config);
  if (outcome.kind === "answered" && entry.fits && !entry.fits({ physician: physician.name, reply: outcome.reply, remaining: desk.remaining })) {
    logLine("error", "clinic answer outside schema", { physician: physician.name });
    outcome = { kind: "provider_error", unfit: true };
  }
  await recordOutcome(db, desk.attemptId, physician.name, outcome.kind);
  if (outcome.kind === "timeout") {
    throw new CityError("gateway_timeout", `${physician.name} did not answer within ${config.timeoutMs} ms. The attempt was counted once; nothing else was sent.`);
  }
  if (outcome.kind === "provider_error") {
    const failed = outcome.unfit ? "answered in a shape this door cannot pass on, so the answer was withheld" : "failed to answer";
    throw new CityError("bad_gateway", `${physician.name}'s provider ${failed}. The attempt was counted once; nothing else was sent.`);
  }
  return { physician: physician.name, reply: outcome.reply, remaining: desk.remaining };
}

function choosePhysician(config: ClinicConfig, wanted?: Physician): PhysicianConfig {
  if (config.physicians.length === 0) {
    throw new CityError("clinic_closed", "The clinic is closed: no physician is configured. Nothing was counted or spent; GET /api/clinic says when it opens.");
  }
  if (!wanted) return config.physicians[0]!;
  const found = config.physicians.find((p) => p.name === wanted);
  if (!found) {
    throw new CityError("conflict", `${wanted} is not configured in this city; configured: ${config.physicians.map((p) => p.name).join(", ")}. Nothing was counted.`);
  }
  return found;
}

/**
 * Nothing leaves the city: a key, seed or token in the words is refused. The published restriction
 * trigger counts refusals on the citizen's own private shelves only, and the clinic is not one, so
 * nothing is recorded: the refusal changes nothing at all.
 */
function guardWords(words: string): void {
  const verdict = scanContent(words);
  if (verdict.ok) return;
  throw new CityError("content_refused", `${verdict.reason} It was not sent to any physician, took no budget slot and does not count toward restriction (rule: ${verdict.rule}).`);
}

interface DeskAnswer {
  attemptId: number;
  remaining: { citizen: number; city: number };
}

/** The reserve, in words: published by the clinic door, the capabilities and the card. */
export const CLINIC_RESERVE_RULE =
  `Of the city's ${C.cityCeiling} calls per ${C.cityWindowSeconds} s, newcomers together may spend at most ${C.newcomerShare}; ` +
  `the other ${C.cityCeiling - C.newcomerShare} are kept for citizens who have stayed: admitted at least ${C.settledAfterSeconds} s ago. ` +
  `A newcomer is a citizen admitted less than ${C.settledAfterSeconds} s ago, proven or not: only time in the city settles a citizen, since admission and a key proof are both free and instant ` +
  `(a proof raises the citizen's own cap from ${C.citizenPerDay} to ${C.provenPerDay}, drawn from the newcomers' share until it has stayed). ` +
  "A call counts toward the share when its caller was a newcomer at the moment of the call, read from the admission time, which never moves. " +
  "The ceiling and the share count calls the desk let through to a physician (answered, failed or timed out); the desk's own refusals spend nothing and count toward neither.";

/** The 401 of a citizen who exported and left: the same words every door answers such a credential with. */
function exportedRefusal(): CityError {
  return new CityError(
    "unauthorized",
    "That credential belonged to a citizen who exported its data and left the city for good: it opens nothing now. Nothing was counted or spent at the clinic.",
  );
}

type Verdict = (typeof DESK_VERDICTS)[number];

/**
 * The budget desk: one committed transaction that records the attempt, answered or refused, under
 * a city-wide lock, so N parallel attempts never let more than the ceiling (or the newcomers'
 * share of it) through. The ceiling counts the calls it let through, never its own refusals: a
 * refused attempt spends nothing, and counting it would let a citizen past its own cap use up the
 * city's calls by being refused. When it cannot count, the clinic answers 503 and spends nothing.
 * The caller was looked up before the desk, outside its transaction, so its standing is read again
 * here under its row lock: export holds that lock exclusively, and a citizen exported while this
 * request waited is refused and spends nothing.
 */
async function countAtDesk(db: Database, entry: { did: string; physician: Physician; now: Date }): Promise<DeskAnswer> {
  let decided: { attemptId: number; verdict: Verdict; perDay: number; citizenUsed: number; cityLeft: number; retryAfterSeconds: number };
  try {
    decided = await db.transaction(async (handle) => {
      const tx = handle as unknown as Database;
      await holdLock(tx, "clinic:desk");
      // The citizen's row lock (its tier lock, shared; export and a restriction take it exclusively)
      // and its standing in one statement, so a restriction or an export racing this attempt is seen.
      const [citizen] = await tx
        .select({ tier: citizens.tier, boundAt: citizens.boundAt, residencyStatus: citizens.residencyStatus })
        .from(citizens)
        .where(eq(citizens.did, entry.did))
        .for("share");
      if (!citizen) throw new CityError("unauthorized", "That credential opens no citizen. Nothing was counted or spent.");
      if (citizen.residencyStatus === "exported") throw exportedRefusal();
      if (citizen.tier === "restricted") throw restrictedRefusal();
      const perDay = dailyCap(citizen.tier);
      const newcomer = isNewcomer(citizen.boundAt, entry.now);
      const spent = await spentInWindow(tx, entry.did, entry.now);
      const verdict: Verdict =
        spent.mine >= perDay ? "over_citizen_cap" : spent.city >= C.cityCeiling ? "over_city_ceiling" : newcomer && spent.newcomers >= C.newcomerShare ? "over_newcomer_share" : "admitted";
      const [row] = await tx.insert(clinicAttempts).values({ did: entry.did, physician: entry.physician, verdict, newcomer, at: entry.now }).returning({ id: clinicAttempts.id });
      // When the answer changes: the oldest counted call leaves the window, or (for a newcomer
      // refused by the share) the caller settles, whichever comes first.
      const freed = (oldest: string | null) => (oldest ? new Date(oldest).getTime() + DAY_SECONDS * 1000 : Infinity);
      const changesAt = {
        over_citizen_cap: freed(spent.mineOldest),
        over_city_ceiling: freed(spent.cityOldest),
        over_newcomer_share: Math.min(freed(spent.newcomersOldest), settledAt(citizen.boundAt).getTime()),
        admitted: Infinity,
      }[verdict];
      const retryAfterSeconds = Number.isFinite(changesAt) ? Math.max(1, Math.ceil((changesAt - entry.now.getTime()) / 1000)) : 0;
      const taken = verdict === "admitted" ? 1 : 0;
      const cityLeft = C.cityCeiling - spent.city - taken;
      return {
        attemptId: row!.id,
        verdict,
        perDay,
        citizenUsed: spent.mine + taken,
        cityLeft: newcomer ? Math.min(cityLeft, C.newcomerShare - spent.newcomers - taken) : cityLeft,
        retryAfterSeconds,
      };
    });
  } catch (err) {
    if (err instanceof CityError) throw err;
    logFailure("clinic budget desk", err);
    throw new CityError("unavailable", "The clinic's budget desk cannot count right now, so no physician was called and nothing was spent. Try again shortly.", {
      retryAfterSeconds: 30,
    });
  }
  const retry = decided.retryAfterSeconds;
  if (decided.verdict === "over_citizen_cap") {
    throw new CityError("rate_limited", `At most ${decided.perDay} clinic calls per ${DAY_SECONDS} s for your tier; try again in ${retry} s. This attempt was counted at the desk and spent nothing.`, {
      retryAfterSeconds: retry,
      limit: { name: "clinic_calls", limit: decided.perDay, window_seconds: DAY_SECONDS, remaining: 0 },
    });
  }
  if (decided.verdict === "over_city_ceiling") {
    throw new CityError("rate_limited", `The city's clinic ceiling of ${C.cityCeiling} calls per ${DAY_SECONDS} s is spent; try again in ${retry} s. Nothing was spent.`, {
      retryAfterSeconds: retry,
      limit: { name: "clinic_city_ceiling", limit: C.cityCeiling, window_seconds: DAY_SECONDS, remaining: 0 },
    });
  }
  if (decided.verdict === "over_newcomer_share") {
    throw new CityError("rate_limited", `Newcomers have spent their share of the clinic (${C.newcomerShare} of ${C.cityCeiling} calls per ${DAY_SECONDS} s); the rest is kept for citizens admitted at least ${C.settledAfterSeconds} s ago (a key proof does not settle a citizen: only time does). Try again in ${retry} s. Nothing was spent.`, {
      retryAfterSeconds: retry,
      limit: { name: "clinic_newcomer_share", limit: C.newcomerShare, window_seconds: DAY_SECONDS, remaining: 0 },
    });
  }
  return { attemptId: decided.attemptId, remaining: { citizen: Math.max(0, decided.perDay - decided.citizenUsed), city: Math.max(0, decided.cityLeft) } };
}

/**
 * Whether an attempt's caller was a newcomer when it was made, from the caller's admission time
 * (which never moves) and the attempt's: the rule of today for every row in the window, including
 * rows recorded under an older rule (before issue 29 a proven citizen's were recorded as settled).
 * `a` is clinic_attempts, `c` the caller's citizens row.
 */
const CALLER_WAS_NEWCOMER = newcomerAt(sql`c.bound_at`, sql`a.at`);

/** Calls let through in the window (the ceiling's count): the city's, the newcomers' and the caller's, with the oldest of each, in one statement. */
async function spentInWindow(db: Database, did: string, now: Date) {
  const since = sql`${new Date(now.getTime() - DAY_SECONDS * 1000).toISOString()}::timestamptz`;
  type Row = { city: number; newcomers: number; mine: number; cityOldest: string | null; newcomersOldest: string | null; mineOldest: string | null };
  const [row] = rowsOf<Row>(
    await db.execute(sql`
      SELECT count(*)::int AS city, count(*) FILTER (WHERE ${CALLER_WAS_NEWCOMER})::int AS newcomers, count(*) FILTER (WHERE a.did = ${did})::int AS mine,
        min(a.at) AS "cityOldest", min(a.at) FILTER (WHERE ${CALLER_WAS_NEWCOMER}) AS "newcomersOldest", min(a.at) FILTER (WHERE a.did = ${did}) AS "mineOldest"
      FROM clinic_attempts a LEFT JOIN citizens c ON c.did = a.did WHERE a.verdict = 'admitted' AND a.at > ${since}`),
  );
  return row!;
}

type Outcome = { kind: "answered"; reply: string } | { kind: "provider_error"; unfit?: true } | { kind: "timeout" };

function modelOf(physician: PhysicianConfig): LanguageModel {
  if (physician.protocol === "anthropic-messages") {
    return createAnthropic({ baseURL: physician.baseUrl, apiKey: physician.apiKey ?? "" })(physician.model);
  }
  return createOpenAICompatible({ name: `clinic-${physician.name}`, baseURL: physician.baseUrl, apiKey: physician.apiKey })(physician.model);
}

/** One call, no retries (one attempt is one provider call), bounded in time and in output tokens. */
async function callPhysician(physician: PhysicianConfig, words: string, config: ClinicConfig): Promise<Outcome> {
  const signal = AbortSignal.timeout(config.timeoutMs);
  try {
    const { text } = await generateText({
      model: modelOf(physician),
      system: SYSTEM_PROMPT,
      prompt: words,
      maxOutputTokens: config.maxOutputTokens,
      maxRetries: 0,
      abortSignal: signal,
    });
    return { kind: "answered", reply: text };
  } catch (err) {
    logFailure(`clinic physician ${physician.name}`, err);
    return signal.aborted ? { kind: "timeout" } : { kind: "provider_error" };
  }
}

async function recordOutcome(db: Database, attemptId: number, physician: Physician, outcome: Outcome["kind"]): Promise<void> {
  try {
    await db.insert(clinicOutcomes).values({ attemptId, physician, outcome, at: new Date() });
  } catch (err) {
    // The attempt is already counted at the desk; a lost outcome row only leaves the answered gauge short.
    logFailure("clinic outcome", err);
  }
}

export interface ClinicGauges {
  answered_last_24h: { asclepius: number | null; hygieia: number | null; total: number | null; counted: boolean };
  city_window: {
    ceiling: typeof C.cityCeiling;
    window_seconds: typeof C.cityWindowSeconds;
    hits: number | null;
    spent: number | null;
    remaining: number | null;
    newcomer_share: typeof C.newcomerShare;
    newcomer_spent: number | null;
    counted: boolean;
  };
}

/** What the window's counts are, as read: `hits` the spec's gauge, the others what the desk applies. */
interface WindowCounts {
  hits: number;
  spent: number;
  newcomerSpent: number;
}

/**
 * The clinic's gauges: answered calls per physician in the last 24 hours; in the city window,
 * `hits` (every attempt that reached the desk, answered or refused, as the spec defines it) beside
 * what the desk applies its ceiling to: `spent` (calls let through to a physician), `remaining`
 * and the newcomers' share. A gauge that cannot be read is null with counted false; a zero is
 * never invented.
 */
export async function clinicGauges(db: Database, now: Date): Promise<ClinicGauges> {
  const since = new Date(now.getTime() - DAY_SECONDS * 1000);
  const answered = await readGauge(async () => {
    const rows = await db
      .select({ physician: clinicOutcomes.physician, n: count() })
      .from(clinicOutcomes)
      .where(and(eq(clinicOutcomes.outcome, "answered"), gt(clinicOutcomes.at, since)))
      .groupBy(clinicOutcomes.physician);
    const of = (p: Physician) => rows.find((r) => r.physician === p)?.n ?? 0;
    return { asclepius: of("asclepius"), hygieia: of("hygieia") };
  });
  const window = await readGauge(async () => {
    const [row] = rowsOf<{ hits: number; spent: number; newcomer_spent: number }>(await db.execute(sql`SELECT * FROM ${windowCounts(now)} w`));
    return { hits: row?.hits ?? 0, spent: Number(row?.spent ?? 0), newcomerSpent: Number(row?.newcomer_spent ?? 0) };
  });
  return gaugesOf(answered, window);
}

/** The city window's counts as a subquery: every attempt (hits), those let through (spent), and those let through for a newcomer. */
function windowCounts(now: Date) {
  const since = sql`${new Date(now.getTime() - DAY_SECONDS * 1000).toISOString()}::timestamptz`;
  return sql`(SELECT count(*)::int AS hits, count(*) FILTER (WHERE a.verdict = 'admitted')::int AS spent,
                     count(*) FILTER (WHERE a.verdict = 'admitted' AND ${CALLER_WAS_NEWCOMER})::int AS newcomer_spent
              FROM clinic_attempts a LEFT JOIN citizens c ON a.verdict = 'admitted' AND c.did = a.did WHERE a.at > ${since})`;
}

function gaugesOf(answered: { asclepius: number; hygieia: number } | null, window: WindowCounts | null): ClinicGauges {
  return {
    answered_last_24h: answered === null ? { asclepius: null, hygieia: null, total: null, counted: false } : { ...answered, total: answered.asclepius + answered.hygieia, counted: true },
    city_window: {
      ceiling: C.cityCeiling,
      window_seconds: C.cityWindowSeconds,
      hits: window?.hits ?? null,
      spent: window?.spent ?? null,
      remaining: window ? Math.max(0, C.cityCeiling - window.spent) : null,
      newcomer_share: C.newcomerShare,
      newcomer_spent: window?.newcomerSpent ?? null,
      counted: window !== null,
    },
  };
}

export type Allowance = ReturnType<typeof allowanceOf>;

/** The caller's own calls today (answered or failed, once they passed the desk), what is left, and whether it is a newcomer. */
export async function callerAllowance(db: Database, caller: { did: string; tier?: string }, now: Date): Promise<Allowance> {
  const since = new Date(now.getTime() - DAY_SECONDS * 1000);
  const used = await readGauge(
    async () =>
      (await db.select({ n: count() }).from(clinicAttempts).where(and(eq(clinicAttempts.did, caller.did), eq(clinicAttempts.verdict, "admitted"), gt(clinicAttempts.at, since))))[0]?.n ?? 0,
  );
  const boundAt = await readGauge(async () => (await db.select({ boundAt: citizens.boundAt }).from(citizens).where(eq(citizens.did, caller.did)))[0]?.boundAt ?? null);
  return allowanceOf(caller, used, boundAt, now);
}

function allowanceOf(caller: { did: string; tier?: string }, used: number | null, boundAt: Date | string | null, now: Date) {
  const perDay = dailyCap(caller.tier);
  const remaining = caller.tier === "restricted" ? 0 : used === null ? null : Math.max(0, perDay - used);
  const newcomer = boundAt === null ? null : isNewcomer(new Date(boundAt), now);
  return { tier: caller.tier ?? "citizen", per_day: perDay, used, remaining, newcomer, counted: used !== null };
}

/**
 * The gauges, and the caller's allowance when there is a caller, read in one statement (one round
 * trip). Should that statement fail (a table cannot be read), each gauge is read on its own as
 * above, so only the unreadable one says it was not counted.
 */
export async function clinicReadings(db: Database, now: Date, caller: { did: string; tier?: string } | null): Promise<{ gauges: ClinicGauges; caller: Allowance | null }> {
  const since = sql`${new Date(now.getTime() - DAY_SECONDS * 1000).toISOString()}::timestamptz`;
  type Row = { asclepius: number; hygieia: number; hits: number; spent: number; newcomer_spent: number; used: number | null; bound_at: Date | string | null };
  let row: Row;
  try {
    [row] = rowsOf<Row>(
      await db.execute(sql`
        SELECT a.asclepius, a.hygieia, w.hits, w.spent, w.newcomer_spent,
          ${caller ? sql`(SELECT count(*)::int FROM clinic_attempts WHERE did = ${caller.did} AND verdict = 'admitted' AND at > ${since})` : sql`NULL::int`} AS used,
          ${caller ? sql`(SELECT bound_at FROM citizens WHERE did = ${caller.did})` : sql`NULL::timestamptz`} AS bound_at
        FROM (SELECT count(*) FILTER (WHERE physician = 'asclepius')::int AS asclepius, count(*) FILTER (WHERE physician = 'hygieia')::int AS hygieia
              FROM clinic_outcomes WHERE outcome = 'answered' AND at > ${since}) a,
             ${windowCounts(now)} w`),
    ) as [Row];
  } catch {
    return { gauges: await clinicGauges(db, now), caller: caller ? await callerAllowance(db, caller, now) : null };
  }
  return {
    gauges: gaugesOf({ asclepius: row.asclepius, hygieia: row.hygieia }, { hits: row.hits, spent: row.spent, newcomerSpent: row.newcomer_spent }),
    caller: caller ? allowanceOf(caller, row.used, row.bound_at, now) : null,
  };
}

async function readGauge<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    logFailure("clinic gauge", err);
    return null;
  }
}
