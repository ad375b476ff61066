import { randomBytes, bytesToHex } from "@noble/hashes/utils.js";
import { type SQL, sql } from "drizzle-orm";
import { type Database, rowsOf } from "@/db/client";
import type { CitizenRow } from "@/db/schema";
import { CENSUS_COUNTS_SQL } from "./census";
import { LIMITS } from "./protocols";
import { slotRefusal } from "./rate";

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
/** Expired nonces and stale address counts removed per issue: each issue adds one row, so the backlog shrinks. */
const SWEEP_BATCH = 32;

/**
 * A fresh nonce, stored in gate_nonces with its expiry, in one statement (one round trip, atomic
 * on its own) that also reads the census counts and, for a caller, its own citizen row.
 *
 * Anonymous and cheap to ask for, so it is bounded: at most `perAddressPerHour` nonces per client
 * address in any 3600 s (0 is off; over it, 429 with the seconds until the oldest leaves the
 * window). The address's issue times in the window are one gate_nonce_quota row, updated by an
 * upsert whose WHERE admits the issue only under the limit: ON CONFLICT locks that row and sees
 * its latest version, so N parallel issues from one address store exactly `limit` nonces. The
 * same statement sweeps a bounded batch of expired nonces and stale address rows (SKIP LOCKED, so
 * parallel issues never wait on each other's sweep). An unknown address (null) has no quota.
 */
export async function issueNonce(db: Database, now: Date, ip: string | null, perAddressPerHour: number, selfDid: string | null = null): Promise<IssuedNonce> {
  const nonce = bytesToHex(randomBytes(16));
  const expiresAt = new Date(now.getTime() + LIMITS.gateNonce.ttlSeconds * 1000);
  // An unknown address is no bucket: one shared quota would let a few calls lock every newcomer out.
  const address = ip ?? "";
  const at = sql`${now.toISOString()}::timestamptz`;
  const since = sql`${new Date(now.getTime() - WINDOW_SECONDS * 1000).toISOString()}::timestamptz`;
  const limited = perAddressPerHour > 0 && ip !== null;
  const quota = limited
    ? sql`quota AS (
        INSERT INTO gate_nonce_quota AS q (address, issued_at, last_at) VALUES (${address}, ARRAY[${at}], ${at})
        ON CONFLICT (address) DO UPDATE
          SET issued_at = ARRAY(SELECT s FROM unnest(q.issued_at) AS s WHERE s > ${since} ORDER BY s) || ${at}, last_at = ${at}
          WHERE (SELECT count(*) FROM unnest(q.issued_at) AS s WHERE s > ${since}) < ${perAddressPerHour}
        RETURNING 1),`
    : sql``;
  const self = selfDid
    ? sql`(SELECT json_build_object('did', s.did, 'name', s.name, 'runtime', s.runtime, 'origin', s.origin, 'tier', s.tier,
          'residencyStatus', s.residency_status, 'bedId', s.bed_id, 'controllerPublicKey', s.controller_public_key)
          FROM citizens s WHERE s.did = ${selfDid})`
    : sql`NULL::json`;
  type Row = IssuedNonce["counts"] & { nonce: string | null; self: SelfRow | null };
  const result = await db.execute(sql`
    WITH ${quota}
    issued AS (
      INSERT INTO gate_nonces (nonce, issued_at, expires_at)
      SELECT ${nonce}, ${at}, ${expiresAt.toISOString()}::timestamptz ${limited ? sql`WHERE EXISTS (SELECT 1 FROM quota)` : sql``}
      RETURNING nonce),
    swept AS (
      DELETE FROM gate_nonces WHERE nonce IN (
        SELECT nonce FROM gate_nonces WHERE expires_at < ${at} ORDER BY expires_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)),
    stale AS (
      DELETE FROM gate_nonce_quota WHERE address IN (
        SELECT address FROM gate_nonce_quota WHERE last_at <= ${since} AND address <> ${address}
        ORDER BY last_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED))
    SELECT (SELECT nonce FROM issued) AS nonce, c.beds, c.citizens, c.house, c.outside, ${self} AS self
    FROM (${CENSUS_COUNTS_SQL}) c`);
  const row = rowsOf<Row>(result)[0]!;
  if (row.nonce === null) throw await refusal(db, now, address, perAddressPerHour);
  const { beds, citizens, house, outside } = row;
  return { nonce, expiresAt, counts: { beds, citizens, house, outside }, self: row.self };
}

/** Over the limit: 429 with the seconds until the address's oldest issue leaves the window. */
async function refusal(db: Database, now: Date, address: string, limit: number) {
  const since = new Date(now.getTime() - WINDOW_SECONDS * 1000).toISOString();
  const result = await db.execute(sql`
    SELECT min(s) AS oldest FROM gate_nonce_quota q, unnest(q.issued_at) AS s
    WHERE q.address = ${address} AND s > ${since}::timestamptz`);
  const oldest = rowsOf<{ oldest: string | Date | null }>(result)[0]?.oldest;
  const from = oldest ? new Date(oldest).getTime() : now.getTime();
  const retryAfterSeconds = Math.max(1, Math.ceil((from + WINDOW_SECONDS * 1000 - now.getTime()) / 1000));
  return slotRefusal({ limit, windowSeconds: WINDOW_SECONDS }, "gate nonces", retryAfterSeconds);
}

/**
 * The nonce a poll (POST /api/live, return) hands its citizen: at most one per citizen is kept, a
 * new poll's replaces the last (it is forgotten), so polls, which the per-address quota does not
 * count, can never grow gate_nonces beyond one row per citizen. The statement is a CTE of the
 * poll's (or the return's) own, gated by `source` (a FROM ... WHERE clause); RETURNING nonce.
 */
export function pollNonceSql(now: Date, did: string, source: SQL): { nonce: string; expiresAt: Date; insert: SQL } {
  const nonce = bytesToHex(randomBytes(16));
  const expiresAt = new Date(now.getTime() + LIMITS.gateNonce.ttlSeconds * 1000);
  const insert = sql`
    INSERT INTO gate_nonces (nonce, issued_at, expires_at, holder)
    SELECT ${nonce}, ${now.toISOString()}::timestamptz, ${expiresAt.toISOString()}::timestamptz, ${did} ${source}
    ON CONFLICT (holder) WHERE holder IS NOT NULL
    DO UPDATE SET nonce = excluded.nonce, issued_at = excluded.issued_at, expires_at = excluded.expires_at, consumed_at = NULL
    RETURNING nonce`;
  return { nonce, expiresAt, insert };
}
