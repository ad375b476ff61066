import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { type CitizenRow } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { CENSUS_COUNTS_SQL } from "./census";
import { gcraTerms, gcraFitsSql, gcraNextSql, gcraRetryAfterSeconds, type GcraRate } from "./gcra";
import { checkNonce, mintNonce, nonceMacKey } from "./nonce-mac";

/** What a gate description shows of its caller (lib/city/citizens.ts citizenSelf). */
export type SelfRow = Pick<CitizenRow, "did" | "name" | "runtime" | "origin" | "tier" | "residencyStatus" | "bedId" | "controllerPublicKey">;

export interface IssuedNonce {
  nonce: string;
  expiresAt: Date;
  /** The census counts of citizens, read in the same statement. */
  counts: { beds: number; citizens: number; house: number; outside: number };
  /** The citizen `selfDid` names, when one was asked for and exists. */
  self: SelfRow | null;
}

const WINDOW_SECONDS = 3600;
/** Rows removed per write by the sweeps: each write adds one row at most, so a backlog shrinks. */
const SWEEP_BATCH = 32;

/** GET /gate's quota of one client address, as GCRA counts it (gcra.ts). */
export function addressRate(perAddressPerHour: number): GcraRate {
  return { limit: perAddressPerHour, windowSeconds: WINDOW_SECONDS };
}

/**
 * A fresh nonce (nonce-mac.ts: no row), in one statement that reads the census counts and, for a
 * caller, its own citizen row. Where the client's address is known and the quota is on
 * (`perAddressPerHour` > 0) the same statement counts the issue on the address's one
 * gate_nonce_quota row (GCRA: a burst of the limit, then one every 3600 / limit s; an upsert whose
 * WHERE admits the issue only when it fits: ON CONFLICT locks that row and sees its latest
 * version, so N parallel issues from one address get exactly what fits) and sweeps a bounded batch
 * of rows whose tat has passed (SKIP LOCKED: parallel issues never wait on each other's sweep).
 * Nothing else is written, and with no known address (no trusted proxy) or the quota off, nothing
 * at all: no issue ever waits for another address's row. Over the quota: 429 with the seconds until
 * one more fits.
 */
export async function issueNonce(db: Database, now: Date, ip: string | null, perAddressPerHour: number, selfDid: string | null = null): Promise<IssuedNonce> {
  const { nonce, expiresAt } = mintNonce(await nonceMacKey(db), now);
  const at = sql`${now.toISOString()}::timestamptz`;
  const rate = addressRate(perAddressPerHour);
  const limited = perAddressPerHour > 0 && ip !== null;
  const next = gcraNextSql(rate, sql`q.tat`, at);
  const quota = limited
    ? sql`WITH quota AS (
        INSERT INTO gate_nonce_quota AS q (address, tat) VALUES (${ip}, ${gcraNextSql(rate, sql`NULL::timestamptz`, at)})
        ON CONFLICT (address) DO UPDATE SET tat = ${next} WHERE ${gcraFitsSql(rate, next, at)}
        RETURNING 1),
      stale AS (
        DELETE FROM gate_nonce_quota WHERE address IN (
          SELECT address FROM gate_nonce_quota WHERE tat < ${at} AND address <> ${ip}
          ORDER BY tat LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED))`
    : sql``;
  const taken = limited
    ? sql`(SELECT count(*)::int FROM quota) AS taken, (SELECT tat FROM gate_nonce_quota WHERE address = ${ip}) AS tat`
    : sql`1 AS taken, NULL::timestamptz AS tat`;
  const self = selfDid
    ? sql`(SELECT json_build_object('did', s.did, 'name', s.name, 'runtime', s.runtime, 'origin', s.origin, 'tier', s.tier,
          'residencyStatus', s.residency_status, 'bedId', s.bed_id, 'controllerPublicKey', s.controller_public_key)
          FROM citizens s WHERE s.did = ${selfDid})`
    : sql`NULL::json`;
  type Row = IssuedNonce["counts"] & Record<string, unknown> & { self: SelfRow | null; taken: number; tat: string | Date | null };
  const result = await db.execute(sql`${quota}
    SELECT ${taken}, c.beds, c.citizens, c.house, c.outside, ${self} AS self
    FROM (${CENSUS_COUNTS_SQL}) c`);
  const row = rowsOf<Row>(result)[0]!;
  if (Number(row.taken) !== 1) throw quotaRefusal(rate, gcraRetryAfterSeconds(rate, row.tat === null ? null : new Date(row.tat), now));
  const { beds, citizens, house, outside } = row;
  return { nonce, expiresAt, counts: { beds, citizens, house, outside }, self: row.self };
}

/** Over the address's quota: 429 with the seconds until one more nonce fits. */
function quotaRefusal(rate: GcraRate, retryAfterSeconds: number): CityError {
  return new CityError(
    "rate_limited",
    `At most ${rate.limit} gate nonces per ${rate.windowSeconds} seconds per client address (${gcraTerms(rate)}); try again in ${retryAfterSeconds} s.`,
    { retryAfterSeconds, limit: { name: "gate nonces", limit: rate.limit, window_seconds: rate.windowSeconds, remaining: 0 } },
  );
}

/**
 * The nonce a poll (POST /api/live, return) hands its citizen: made as GET /gate makes one, with no
 * row and no quota (the poll is a proven citizen's). Nothing of it is stored until it is spent.
 */
export async function pollNonce(db: Database, now: Date): Promise<{ nonce: string; expiresAt: Date }> {
  return mintNonce(await nonceMacKey(db), now);
}

/**
 * What spends a nonce, as CTEs for the spender's own statement: `spent` (the nonce recorded in
 * gate_nonces, RETURNING 1: its primary key admits exactly one spender; a parallel twin's INSERT
 * waits for the first's transaction and then inserts nothing, or inserts if that one rolled back)
 * and `spent_swept` (a bounded batch of spent nonces no instance can take as fresh any more, SKIP
 * LOCKED). A nonce the city did not make, or not fresh now (forged, altered, expired or
 * future-dated), is recorded nowhere and spends nothing: `spent` is empty, as for a spent one.
 */
export async function spendNonceCtes(db: Database, nonce: string, now: Date): Promise<SQL> {
  const fresh = checkNonce(await nonceMacKey(db), nonce, now);
  if (!fresh) return sql`spent AS (SELECT 1 WHERE false)`;
  const at = sql`${now.toISOString()}::timestamptz`;
  return sql`spent AS (
      INSERT INTO gate_nonces (nonce, expires_at) VALUES (${nonce}, ${fresh.keptUntil.toISOString()}::timestamptz)
      ON CONFLICT DO NOTHING RETURNING 1),
    spent_swept AS (
      DELETE FROM gate_nonces WHERE nonce IN (
        SELECT nonce FROM gate_nonces WHERE expires_at < ${at} ORDER BY expires_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED))`;
}

/** Spends a nonce in a statement of its own: true for exactly one caller, and only while it is fresh. */
export async function consumeNonce(db: Database, nonce: string, now: Date): Promise<boolean> {
  const [row] = rowsOf<{ spent: number }>(await db.execute(sql`WITH ${await spendNonceCtes(db, nonce, now)} SELECT count(*)::int AS spent FROM spent`));
  return Number(row!.spent) === 1;
}
