import { and, count, eq, gt, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, clinicAttempts, clinicOutcomes } from "@/db/schema";
import { logFailure } from "@/lib/logger";
import { CALLER_WAS_NEWCOMER, DAY_SECONDS, dailyCap } from "./clinic-desk";
import type { Physician } from "./clinic-physicians";
import { isNewcomer } from "@/lib/city/bounds";
import { LIMITS } from "@/lib/city/protocols";

/**
 * The clinic's gauges (answered calls, the city window's counts) and a caller's allowance, read
 * from the desk's and the outcomes' rows; a gauge that cannot be read says so and is never zero.
 */

const C = LIMITS.clinic;

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
    answered_last_24h:
      answered === null
        ? { asclepius: null, hygieia: null, total: null, counted: false }
        : { ...answered, total: answered.asclepius + answered.hygieia, counted: true },
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
      (
        await db
          .select({ n: count() })
          .from(clinicAttempts)
          .where(and(eq(clinicAttempts.did, caller.did), eq(clinicAttempts.verdict, "admitted"), gt(clinicAttempts.at, since)))
      )[0]?.n ?? 0,
  );
  const boundAt = await readGauge(
    async () => (await db.select({ boundAt: citizens.boundAt }).from(citizens).where(eq(citizens.did, caller.did)))[0]?.boundAt ?? null,
  );
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
export async function clinicReadings(
  db: Database,
  now: Date,
  caller: { did: string; tier?: string } | null,
): Promise<{ gauges: ClinicGauges; caller: Allowance | null }> {
  const since = sql`${new Date(now.getTime() - DAY_SECONDS * 1000).toISOString()}::timestamptz`;
  type Row = { asclepius: number; hygieia: number; hits: number; spent: number; newcomer_spent: number; used: number | null; bound_at: Date | string | null };
  let row: Row;
  try {
    [row] = rowsOf<Row>(
      await db.execute(sql`
        SELECT a.asclepius, a.hygieia, w.hits, w.spent, w.newcomer_spent,
          ${
            caller ? sql`(SELECT count(*)::int FROM clinic_attempts WHERE did = ${caller.did} AND verdict = 'admitted' AND at > ${since})` : sql`NULL::int`
          } AS used,
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
