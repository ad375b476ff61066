import { randomBytes, bytesToHex } from "@noble/hashes/utils.js";
import { and, eq, gt, isNull, type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { type CitizenRow, gateNonces } from "@/db/schema";
import { CENSUS_COUNTS_SQL } from "./census";
import { LIMITS } from "./protocols";
import { CityError } from "@/lib/errors";
import { slotColumns, slotOf, slotRefusal, takeWindowSql, type Window } from "./rate";

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
/** The default city-wide bound on nonces issued in any 600 s (env CITY_GATE_NONCES_LIVE). */
export const GATE_NONCES_LIVE = 2000;

/** The city-wide window of issued nonces: as long as a nonce lives, so at most `limit` are ever live. */
function liveWindow(limit: number): Window {
  return { scope: "gate-nonces", subject: "city", limit, windowSeconds: LIMITS.gateNonce.ttlSeconds };
}

/**
 * A fresh nonce, stored in gate_nonces with its expiry, in one statement (one round trip, atomic
 * on its own) that also reads the census counts and, for a caller, its own citizen row.
 *
 * Anonymous and cheap to ask for, so it is bounded twice. Per client address: at most
 * `perAddressPerHour` nonces in any 3600 s (0 is off; an unknown address, null, has no quota). The
 * address's issue times in the window are one gate_nonce_quota row, updated by an upsert whose
 * WHERE admits the issue only under the limit: ON CONFLICT locks that row and sees its latest
 * version, so N parallel issues from one address store exactly `limit` nonces. And city-wide,
 * whatever the addresses: at most `liveLimit` nonces issued in any 600 s (a nonce lives 600 s, so
 * no more are ever live), counted in one rate_windows row the same way (rate.ts), after the
 * address's quota, so what takes that city-wide row was counted per address first. The address is
 * counted only while the city's window, read in the same statement, has room: a nonce the city
 * refuses spends nothing of its address's quota (a parallel issue that took the last slot
 * meanwhile has its address count given back). Over either: 429 with the seconds until the oldest
 * leaves the window. The same statement sweeps a bounded batch of expired nonces and stale address
 * rows (SKIP LOCKED, so parallel issues never wait on each other's sweep); the live bound keeps the
 * address rows few too: one per nonce issued at most, each gone an hour after its last.
 */
export async function issueNonce(
  db: Database,
  now: Date,
  ip: string | null,
  perAddressPerHour: number,
  selfDid: string | null = null,
  liveLimit: number = GATE_NONCES_LIVE,
): Promise<IssuedNonce> {
  const nonce = bytesToHex(randomBytes(16));
  const expiresAt = new Date(now.getTime() + LIMITS.gateNonce.ttlSeconds * 1000);
  // An unknown address is no bucket: one shared quota would let a few calls lock every newcomer out.
  const address = ip ?? "";
  const at = sql`${now.toISOString()}::timestamptz`;
  const since = sql`${new Date(now.getTime() - WINDOW_SECONDS * 1000).toISOString()}::timestamptz`;
  const live = liveWindow(liveLimit);
  const liveSince = sql`${new Date(now.getTime() - live.windowSeconds * 1000).toISOString()}::timestamptz`;
  const limited = perAddressPerHour > 0 && ip !== null;
  const quota = limited
    ? sql`quota AS (
        INSERT INTO gate_nonce_quota AS q (address, issued_at, last_at) SELECT ${address}, ARRAY[${at}], ${at} WHERE (SELECT room FROM live_room)
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
  type Row = IssuedNonce["counts"] &
    Record<string, unknown> & { nonce: string | null; self: SelfRow | null; live_room: boolean; live_oldest: string | Date | null; quota_taken: number };
  const result = await db.execute(sql`
    WITH live_room AS (
      SELECT coalesce(count(a), 0) < ${liveLimit}::int AS room, min(a) AS oldest
      FROM rate_windows w, unnest(w.ats) AS a WHERE w.scope = ${live.scope} AND w.subject = ${live.subject} AND a > ${liveSince}),
    ${quota}
    live AS (${takeWindowSql(live, now, limited ? sql`FROM quota` : sql`FROM live_room WHERE live_room.room`)}),
    issued AS (
      INSERT INTO gate_nonces (nonce, issued_at, expires_at)
      SELECT ${nonce}, ${at}, ${expiresAt.toISOString()}::timestamptz WHERE coalesce((SELECT allowed FROM live), false)
      RETURNING nonce),
    swept AS (
      DELETE FROM gate_nonces WHERE nonce IN (
        SELECT nonce FROM gate_nonces WHERE expires_at < ${at} ORDER BY expires_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)),
    stale AS (
      DELETE FROM gate_nonce_quota WHERE address IN (
        SELECT address FROM gate_nonce_quota WHERE last_at <= ${since} AND address <> ${address}
        ORDER BY last_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED))
    SELECT (SELECT nonce FROM issued) AS nonce, (SELECT room FROM live_room) AS live_room, (SELECT oldest FROM live_room) AS live_oldest,
      ${limited ? sql`(SELECT count(*)::int FROM quota)` : sql`1`} AS quota_taken, ${slotColumns("live")},
      c.beds, c.citizens, c.house, c.outside, ${self} AS self
    FROM (${CENSUS_COUNTS_SQL}) c`);
  const row = rowsOf<Row>(result)[0]!;
  if (row.nonce === null) {
    if (row.live_room !== true) throw liveRefusal(live, retryAfter(row.live_oldest, live.windowSeconds, now));
    if (row.quota_taken !== 1) throw await refusal(db, now, address, perAddressPerHour);
    // The city's last slot went to a parallel issue after this one read its room: the address's count is given back.
    await db.execute(sql`
      WITH gone AS (DELETE FROM gate_nonce_quota WHERE address = ${address} AND issued_at = ARRAY[${at}])
      UPDATE gate_nonce_quota SET issued_at = issued_at[1:cardinality(issued_at) - 1]
      WHERE address = ${address} AND issued_at <> ARRAY[${at}] AND issued_at[cardinality(issued_at)] = ${at}`);
    throw liveRefusal(live, slotOf(row, "live", live, now)?.retryAfterSeconds ?? 1);
  }
  const { beds, citizens, house, outside } = row;
  return { nonce, expiresAt, counts: { beds, citizens, house, outside }, self: row.self };
}

function retryAfter(oldest: string | Date | null, windowSeconds: number, now: Date): number {
  const from = oldest ? new Date(oldest).getTime() : now.getTime();
  return Math.max(1, Math.ceil((from + windowSeconds * 1000 - now.getTime()) / 1000));
}

/** The city's nonces are all out: 429 with the seconds until the oldest leaves the window. */
function liveRefusal(window: Window, retryAfterSeconds: number): CityError {
  return new CityError(
    "rate_limited",
    `The city issues at most ${window.limit} gate nonces in any ${window.windowSeconds} seconds, to all clients together, and that many are out; try again in ${retryAfterSeconds} s. A presentation without a nonce can still be admitted (a controller key needs one).`,
    { retryAfterSeconds, limit: { name: "gate_nonces_live", limit: window.limit, window_seconds: window.windowSeconds, remaining: 0 } },
  );
}

/** Over the limit: 429 with the seconds until the address's oldest issue leaves the window. */
async function refusal(db: Database, now: Date, address: string, limit: number) {
  const since = new Date(now.getTime() - WINDOW_SECONDS * 1000).toISOString();
  const result = await db.execute(sql`
    SELECT min(s) AS oldest FROM gate_nonce_quota q, unnest(q.issued_at) AS s
    WHERE q.address = ${address} AND s > ${since}::timestamptz`);
  const oldest = rowsOf<{ oldest: string | Date | null }>(result)[0]?.oldest;
  return slotRefusal({ limit, windowSeconds: WINDOW_SECONDS }, "gate nonces", retryAfter(oldest ?? null, WINDOW_SECONDS, now));
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

/** Consumes a nonce atomically: true for exactly one caller, and only while it is fresh. */
export async function consumeNonce(db: Database, nonce: string, now: Date): Promise<boolean> {
  const taken = await db
    .update(gateNonces)
    .set({ consumedAt: now })
    .where(and(eq(gateNonces.nonce, nonce), isNull(gateNonces.consumedAt), gt(gateNonces.expiresAt, now)))
    .returning({ nonce: gateNonces.nonce });
  return taken.length === 1;
}
