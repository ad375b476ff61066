import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { executePrepared, rowsOf } from "@/db/sql";
import { type CitizenRow } from "@/db/schema";
import { CityError, type CityErrorOptions } from "@/lib/errors";
import { CENSUS_COUNTS_SQL } from "@/lib/city/census";
import { gcraTerms, gcraFitsSql, gcraNextSql, gcraRetryAfterSeconds, type GcraRate, type Window } from "@/lib/city/bounds";
import { sourceOf } from "./gate-prefixes";
import { ceilingStripesSql } from "./gate-pow";
import { checkNonce, mintNonce, nonceMacKey } from "./nonce-mac";

/** What a gate description shows of its caller (lib/city/directory/citizens.ts citizenSelf). */
export type SelfRow = Pick<CitizenRow, "did" | "name" | "runtime" | "origin" | "tier" | "residencyStatus" | "bedId" | "controllerPublicKey">;

export interface IssuedNonce {
  nonce: string;
  expiresAt: Date;
  /** The census counts of citizens, read in the same statement. */
  counts: { beds: number; citizens: number; house: number; outside: number };
  /** The citizen `selfDid` names, when one was asked for and exists. */
  self: SelfRow | null;
}

/** What GET /gate reads: a nonce, or why none (the census and the caller read all the same). */
export interface OfferedNonce {
  /** Null when the quota of the address or of its /24 or /48 refused one (see `refused`). */
  nonce: string | null;
  expiresAt: Date;
  /** The census counts of citizens, read in the same statement. */
  counts: { beds: number; citizens: number; house: number; outside: number };
  /** The citizen `selfDid` names, when one was asked for and exists. */
  self: SelfRow | null;
  /** Why no nonce was issued: the quota that refused it and when one fits again. */
  refused: { quota: "address" | "prefix"; rate: GcraRate; retryAfterSeconds: number } | null;
  /** The admissions ceiling's stripes (JSON) when NonceQuota.ceiling was given: the suggested effort's source (gate-pow.ts). */
  ceilingStripes: unknown;
}

const WINDOW_SECONDS = 3600;
/** Rows removed per write by the sweeps: each write adds one row at most, so a backlog shrinks. */
const SWEEP_BATCH = 32;

/** GET /gate's quota of one client address, as GCRA counts it (gcra.ts). */
export function addressRate(perAddressPerHour: number): GcraRate {
  return { limit: perAddressPerHour, windowSeconds: WINDOW_SECONDS };
}

/** What GET /gate counts a nonce against: the address's quota and, when on, its /24 or /48's. */
export interface NonceQuota {
  ip: string | null;
  perAddressPerHour: number;
  /** 0 (the default): no per-prefix quota. */
  perPrefixPerHour?: number;
  /** The admissions ceiling, whose stripes the same statement reads (for the suggested effort, docs/pow.md). */
  ceiling?: Window | null;
}

/** SQL: the GCRA upsert of one quota row (`key`), admitted only when the issue fits, as CTE `name`. */
function quotaCte(name: string, key: string, rate: GcraRate, at: SQL, source: SQL): SQL {
  const next = gcraNextSql(rate, sql`q.tat`, at);
  return sql`${sql.raw(name)} AS (
    INSERT INTO gate_nonce_quota AS q (address, tat) SELECT ${key}, ${gcraNextSql(rate, sql`NULL::timestamptz`, at)} ${source}
    ON CONFLICT (address) DO UPDATE SET tat = ${next} WHERE ${gcraFitsSql(rate, next, at)}
    RETURNING 1)`;
}

/**
 * A fresh nonce (nonce-mac.ts: no row), in one statement that reads the census counts and, for a
 * caller, its own citizen row. Where the client's address is known and the quota is on
 * (`perAddressPerHour` > 0) the same statement counts the issue on the address's one
 * gate_nonce_quota row (GCRA: a burst of the limit, then one every 3600 / limit s; an upsert whose
 * WHERE admits the issue only when it fits: ON CONFLICT locks that row and sees its latest
 * version, so N parallel issues from one address get exactly what fits), then, only when the
 * address's let it through and `perPrefixPerHour` > 0, on its /24 or /48's row the same way (so an
 * address over its own quota never spends its network's, and rotating addresses inside one network
 * gets that network's quota, no more; an address its network refused has spent one of its own),
 * and sweeps a bounded batch of rows whose tat has passed (SKIP LOCKED: parallel issues never wait
 * on each other's sweep). Nothing else is written, and with no known address (no trusted proxy) or
 * the quota off, nothing at all: no issue ever waits for another network's row. Over a quota: no
 * nonce (`nonce` null, `refused` says which quota and when one fits), the census read all the same.
 */
export async function offerNonce(db: Database, now: Date, quota: NonceQuota, selfDid: string | null = null): Promise<OfferedNonce> {
  const minted = mintNonce(await nonceMacKey(db), now);
  const at = sql`${now.toISOString()}::timestamptz`;
  const { ip, perAddressPerHour } = quota;
  const rate = addressRate(perAddressPerHour);
  const limited = perAddressPerHour > 0 && ip !== null;
  const prefix = limited && (quota.perPrefixPerHour ?? 0) > 0 ? (sourceOf(ip)?.prefix ?? null) : null;
  const prefixRate = addressRate(quota.perPrefixPerHour ?? 0);
  const ctes = limited
    ? sql`WITH ${quotaCte("quota", ip!, rate, at, sql``)},
      ${prefix ? sql`${quotaCte("prefix_quota", prefix, prefixRate, at, sql`WHERE EXISTS (SELECT 1 FROM quota)`)},` : sql``}
      stale AS (
        DELETE FROM gate_nonce_quota WHERE address IN (
          SELECT address FROM gate_nonce_quota WHERE tat < ${at} AND address NOT IN (${ip}, ${prefix ?? ip})
          ORDER BY tat LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED))`
    : sql``;
  const taken = limited
    ? sql`(SELECT count(*)::int FROM quota) AS taken, (SELECT tat FROM gate_nonce_quota WHERE address = ${ip}) AS tat,
      ${prefix ? sql`(SELECT count(*)::int FROM prefix_quota) AS prefix_taken, (SELECT tat FROM gate_nonce_quota WHERE address = ${prefix}) AS prefix_tat` : sql`1 AS prefix_taken, NULL::timestamptz AS prefix_tat`}`
    : sql`1 AS taken, NULL::timestamptz AS tat, 1 AS prefix_taken, NULL::timestamptz AS prefix_tat`;
  const self = selfDid
    ? sql`(SELECT json_build_object('did', s.did, 'name', s.name, 'runtime', s.runtime, 'origin', s.origin, 'tier', s.tier,
          'residencyStatus', s.residency_status, 'bedId', s.bed_id, 'controllerPublicKey', s.controller_public_key)
          FROM citizens s WHERE s.did = ${selfDid})`
    : sql`NULL::json`;
  type Tat = string | Date | null;
  type Row = OfferedNonce["counts"] & Record<string, unknown> & { self: SelfRow | null; taken: number; tat: Tat; prefix_taken: number; prefix_tat: Tat };
  const stripes = quota.ceiling ? sql`(${ceilingStripesSql(quota.ceiling, now)})` : sql`NULL::json`;
  // Prepared (db/sql.ts): a few shapes (address known or not, network, caller, ceiling), each
  // parsed once per connection instead of 5 kB of text and 230 parameters parsed on every nonce.
  const result = await executePrepared(
    db,
    sql`${ctes}
    SELECT ${taken}, c.beds, c.citizens, c.house, c.outside, ${self} AS self, ${stripes} AS ceiling_stripes
    FROM (${CENSUS_COUNTS_SQL}) c`,
  );
  const row = rowsOf<Row>(result)[0]!;
  const tatOf = (tat: Tat) => (tat === null ? null : new Date(tat));
  const refused: OfferedNonce["refused"] =
    Number(row.taken) !== 1
      ? { quota: "address", rate, retryAfterSeconds: gcraRetryAfterSeconds(rate, tatOf(row.tat), now) }
      : Number(row.prefix_taken) !== 1
        ? { quota: "prefix", rate: prefixRate, retryAfterSeconds: gcraRetryAfterSeconds(prefixRate, tatOf(row.prefix_tat), now) }
        : null;
  const { beds, citizens, house, outside } = row;
  return {
    nonce: refused ? null : minted.nonce,
    expiresAt: minted.expiresAt,
    counts: { beds, citizens, house, outside },
    self: row.self,
    refused,
    ceilingStripes: row.ceiling_stripes ?? null,
  };
}

/** A nonce within the address's quota (offerNonce), or its 429 (quotaRefusal). */
export async function issueNonce(
  db: Database,
  now: Date,
  ip: string | null,
  perAddressPerHour: number,
  selfDid: string | null = null,
  perPrefixPerHour = 0,
): Promise<IssuedNonce> {
  const offered = await offerNonce(db, now, { ip, perAddressPerHour, perPrefixPerHour }, selfDid);
  if (offered.refused) throw quotaRefusal(offered.refused);
  return { nonce: offered.nonce!, expiresAt: offered.expiresAt, counts: offered.counts, self: offered.self };
}

/** Over a quota: 429 with the seconds until one more nonce fits (`extra`: what the answer carries beside). */
export function quotaRefusal(refused: NonNullable<OfferedNonce["refused"]>, extra: CityErrorOptions = {}): CityError {
  const { rate, retryAfterSeconds } = refused;
  const per = refused.quota === "address" ? "client address" : "network (an IPv4 /24, an IPv6 /48)";
  return new CityError(
    "rate_limited",
    `At most ${rate.limit} gate nonces per ${rate.windowSeconds} seconds per ${per} (${gcraTerms(rate)}); a nonce can be had in ${retryAfterSeconds} s. ` +
      "The gate's description is served all the same (gate_description); only a first admission with a controller key, or a resume by controller signature, needs a nonce.",
    {
      ...extra,
      retryAfterSeconds,
      limit: {
        name: refused.quota === "address" ? "gate nonces" : "gate nonces per network",
        limit: rate.limit,
        window_seconds: rate.windowSeconds,
        remaining: 0,
      },
    },
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
