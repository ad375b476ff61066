import { eq, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, clinicAttempts, DESK_VERDICTS } from "@/db/schema";
import { logFailure } from "@/lib/logger";
import { CityError } from "@/lib/errors";
import type { Physician } from "./clinic-physicians";
import { holdLock, isNewcomer, newcomerAt, settledAt } from "@/lib/city/bounds";
import { LIMITS } from "@/lib/city/protocols";
import { restrictedRefusal } from "@/lib/city/restriction";

/**
 * The clinic's budget desk: the caps (a citizen's per day, the city's ceiling and the newcomers'
 * share of it), the reserve rule in words, and the one committed transaction that counts an attempt.
 */

export const DAY_SECONDS = 86_400;
const C = LIMITS.clinic;

export function dailyCap(tier: string | undefined): number {
  return tier === "proven" ? C.provenPerDay : C.citizenPerDay;
}

interface DeskAnswer {
  attemptId: number;
  remaining: { citizen: number; city: number };
}

/** The reserve, in words: published by the clinic door, the capabilities and the card. */
export const CLINIC_RESERVE_RULE =
  `Of the city's ${C.cityCeiling} calls per ${C.cityWindowSeconds} s, newcomers together may spend at most ${C.newcomerShare}; ` +
  `the other ${C.cityCeiling - C.newcomerShare} are kept for citizens who have stayed: admitted at least ${C.settledAfterSeconds} s ago. ` +
  `A newcomer is a citizen admitted less than ${C.settledAfterSeconds} s ago, proven or not: only time in the city settles a citizen, ` +
  "since admission and a key proof are both free and instant " +
  `(a proof raises the citizen's own cap from ${C.citizenPerDay} to ${C.provenPerDay}, drawn from the newcomers' share until it has stayed). ` +
  "A call counts toward the share when its caller was a newcomer at the moment of the call, read from the admission time, which never moves. " +
  "The ceiling and the share count calls the desk let through to a physician (answered, failed or timed out); " +
  "the desk's own refusals spend nothing and count toward neither.";

/** The 401 of a citizen who exported and left: the same words every door answers such a credential with. */
function exportedRefusal(): CityError {
  return new CityError(
    "unauthorized",
    "That credential belonged to a citizen who exported its data and left the city for good: it opens nothing now. " +
      "Nothing was counted or spent at the clinic.",
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
export async function countAtDesk(db: Database, entry: { did: string; physician: Physician; now: Date }): Promise<DeskAnswer> {
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
        spent.mine >= perDay
          ? "over_citizen_cap"
          : spent.city >= C.cityCeiling
            ? "over_city_ceiling"
            : newcomer && spent.newcomers >= C.newcomerShare
              ? "over_newcomer_share"
              : "admitted";
      const [row] = await tx
        .insert(clinicAttempts)
        .values({ did: entry.did, physician: entry.physician, verdict, newcomer, at: entry.now })
        .returning({ id: clinicAttempts.id });
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
    throw new CityError(
      "unavailable",
      "The clinic's budget desk cannot count right now, so no physician was called and nothing was spent. Try again shortly.",
      { retryAfterSeconds: 30 },
    );
  }
  const retry = decided.retryAfterSeconds;
  if (decided.verdict === "over_citizen_cap") {
    throw new CityError(
      "rate_limited",
      `At most ${decided.perDay} clinic calls per ${DAY_SECONDS} s for your tier; try again in ${retry} s. ` +
        "This attempt was counted at the desk and spent nothing.",
      {
        retryAfterSeconds: retry,
        limit: { name: "clinic_calls", limit: decided.perDay, window_seconds: DAY_SECONDS, remaining: 0 },
      },
    );
  }
  if (decided.verdict === "over_city_ceiling") {
    throw new CityError(
      "rate_limited",
      `The city's clinic ceiling of ${C.cityCeiling} calls per ${DAY_SECONDS} s is spent; try again in ${retry} s. Nothing was spent.`,
      {
        retryAfterSeconds: retry,
        limit: { name: "clinic_city_ceiling", limit: C.cityCeiling, window_seconds: DAY_SECONDS, remaining: 0 },
      },
    );
  }
  if (decided.verdict === "over_newcomer_share") {
    throw new CityError(
      "rate_limited",
      `Newcomers have spent their share of the clinic (${C.newcomerShare} of ${C.cityCeiling} calls per ${DAY_SECONDS} s); ` +
        `the rest is kept for citizens admitted at least ${C.settledAfterSeconds} s ago (a key proof does not settle a citizen: only time does). ` +
        `Try again in ${retry} s. Nothing was spent.`,
      {
        retryAfterSeconds: retry,
        limit: { name: "clinic_newcomer_share", limit: C.newcomerShare, window_seconds: DAY_SECONDS, remaining: 0 },
      },
    );
  }
  return { attemptId: decided.attemptId, remaining: { citizen: Math.max(0, decided.perDay - decided.citizenUsed), city: Math.max(0, decided.cityLeft) } };
}

/**
 * Whether an attempt's caller was a newcomer when it was made, from the caller's admission time
 * (which never moves) and the attempt's: the rule of today for every row in the window, including
 * rows recorded under an older rule (a proven citizen's were once recorded as settled).
 * `a` is clinic_attempts, `c` the caller's citizens row.
 */
export const CALLER_WAS_NEWCOMER = newcomerAt(sql`c.bound_at`, sql`a.at`);

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
