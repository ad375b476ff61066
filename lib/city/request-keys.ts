import { sha256 } from "@noble/hashes/sha2.js";
import { hexToBytes } from "@noble/hashes/utils.js";
import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { CityError } from "@/lib/errors";
import { cityFull, newcomerSql, releaseSql, rowBytes, secondsToNextHour, storeBound, type Charge } from "./store-bounds";

/*
 * The keys a citizen signs its requests with (CITY-SIG/1, docs/signed-requests.md) and the nonces of
 * its signed writes. The keys follow citizens.controller_public_key by a trigger (migration 0031):
 * the current key, and each key rotated away until `exp`, the last moment a signature made before
 * the rotation can still be valid.
 */

/** A signature lives at most this long (expires - created). */
export const SIGNATURE_MAX_SECONDS = 300;
/** How far ahead of the city's clock `created` may be. */
export const SIGNATURE_CLOCK_SKEW_SECONDS = 5;
/** Expired nonces removed per signed write: each write adds one row, so the backlog shrinks. */
const NONCE_SWEEP_BATCH = 32;

/** The public JWK of an Ed25519 key (hex), members in RFC 7638's lexicographic order. */
export function publicJwk(publicKeyHex: string): { crv: "Ed25519"; kty: "OKP"; x: string } {
  return { crv: "Ed25519", kty: "OKP", x: Buffer.from(hexToBytes(publicKeyHex)).toString("base64url") };
}

/** The RFC 7638 JWK thumbprint (SHA-256, base64url) of an Ed25519 key given as hex: a signature's keyid. */
export function jwkThumbprint(publicKeyHex: string): string {
  const { crv, kty, x } = publicJwk(publicKeyHex);
  return Buffer.from(sha256(new TextEncoder().encode(`{"crv":"${crv}","kty":"${kty}","x":"${x}"}`))).toString("base64url");
}

/** A key some live citizen may sign with, and that citizen as a write needs it. */
export interface RequestKey {
  thumbprint: string;
  did: string;
  publicKey: string;
  nbf: Date;
  /** When it was rotated away (null: the controller key now); a signature created later is refused. */
  rotatedAt: Date | null;
  exp: Date | null;
  citizen: {
    did: string;
    tier: "citizen" | "proven" | "restricted";
    residencyStatus: "bound" | "away" | "exported";
    bedId: string | null;
    lastSeenAt: Date | null;
  };
}

/**
 * The keys of live citizens among these thumbprints, in one statement: current keys, and keys
 * rotated away whose exp has not passed. Nothing is locked or written (the caller is not proven yet).
 */
export async function requestKeysFor(db: Database, thumbprints: readonly string[], now: Date): Promise<RequestKey[]> {
  if (thumbprints.length === 0) return [];
  type Row = {
    thumbprint: string;
    did: string;
    public_key: string;
    nbf: Date | string;
    rotated_at: Date | string | null;
    exp: Date | string | null;
    tier: RequestKey["citizen"]["tier"];
    residency_status: RequestKey["citizen"]["residencyStatus"];
    bed_id: string | null;
    last_seen_at: Date | string | null;
  };
  const rows = rowsOf<Row>(
    await db.execute(sql`
      SELECT k.thumbprint, k.did, k.public_key, k.nbf, k.rotated_at, k.exp, c.tier, c.residency_status, c.bed_id, c.last_seen_at
      FROM request_keys k JOIN citizens c ON c.did = k.did
      WHERE k.thumbprint IN (${sql.join(
        thumbprints.map((t) => sql`${t}`),
        sql`, `,
      )})
        AND c.residency_status <> 'exported' AND (k.exp IS NULL OR k.exp > ${now.toISOString()}::timestamptz)
      LIMIT 16`),
  );
  const date = (v: Date | string | null) => (v === null ? null : new Date(v));
  return rows.map((r) => ({
    thumbprint: r.thumbprint,
    did: r.did,
    publicKey: r.public_key,
    nbf: new Date(r.nbf),
    rotatedAt: date(r.rotated_at),
    exp: date(r.exp),
    citizen: { did: r.did, tier: r.tier, residencyStatus: r.residency_status, bedId: r.bed_id, lastSeenAt: date(r.last_seen_at) },
  }));
}

/** What a verified signature proves, for the statement that records its nonce and holds its citizen. */
export interface VerifiedSignature {
  did: string;
  keyid: string;
  created: Date;
  expires: Date;
  /** The single-use nonce (required on writes; absent on a read that sent none). */
  nonce: string | null;
}

/**
 * SQL: the signing key is still one the citizen may sign with at `created` (its current key, or a
 * key rotated away after `created` whose exp has not passed), for a WHERE on `citizens`.
 */
export function keyStillValidSql(signed: VerifiedSignature, now: Date): SQL {
  return sql`EXISTS (SELECT 1 FROM request_keys k WHERE k.did = citizens.did AND k.thumbprint = ${signed.keyid}
    AND (k.exp IS NULL OR (k.rotated_at >= ${signed.created.toISOString()}::timestamptz AND k.exp > ${now.toISOString()}::timestamptz)))`;
}

/**
 * The CTEs that record a signed write's nonce, for the statement that also finds its caller
 * (`found`, a CTE of that statement with the caller's row, or none): `nonce_used` (the nonce was
 * already recorded when the statement began), `nonce_swept` (a batch of expired nonces, their
 * bytes given back), `nonce_store` (the city-wide bound of city_stores row signature_nonces,
 * charged for the new row only when the caller was found, the nonce unused and the row fits; the
 * row lock serialises charges and its SET is computed on the latest row version, so parallel
 * writes cannot pass the bound) and `nonce_kept` (the row, inserted only when charged; a parallel
 * twin that recorded the same nonce first makes it insert nothing). Read with nonceColumns.
 */
export function nonceCtes(signed: VerifiedSignature & { nonce: string }, now: Date, found: SQL): SQL {
  const bytes = rowBytes(signed.keyid, signed.nonce);
  const bound = storeBound("signature_nonces");
  const at = sql`${now.toISOString()}::timestamptz`;
  const hour = new Date(now);
  hour.setUTCMinutes(0, 0, 0);
  const hourAt = sql`${hour.toISOString()}::timestamptz`;
  const same = sql`s.hour_start >= ${hourAt}`;
  const hourBytes = sql`(CASE WHEN ${same} THEN s.hour_bytes ELSE 0 END)`;
  const newcomerBytes = sql`(CASE WHEN ${same} THEN s.newcomer_bytes ELSE 0 END)`;
  const fits = sql`(x.go AND s.total_bytes - x.freed + x.b <= ${bound.total}::bigint AND ${hourBytes} + x.b <= ${bound.perHour}::bigint
    AND (NOT x.n OR ${newcomerBytes} + x.b <= ${bound.newcomerPerHour}::bigint))`;
  return sql`
    nonce_used AS (SELECT EXISTS (SELECT 1 FROM signature_nonces WHERE keyid = ${signed.keyid} AND nonce = ${signed.nonce}) AS used),
    nonce_swept AS (
      DELETE FROM signature_nonces d WHERE (d.keyid, d.nonce) IN (
        SELECT keyid, nonce FROM signature_nonces WHERE expires_at < ${at} ORDER BY expires_at LIMIT ${NONCE_SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING d.bytes),
    nonce_store AS (
      UPDATE city_stores AS s SET
        total_bytes = greatest(s.total_bytes - x.freed, 0) + CASE WHEN ${fits} THEN x.b ELSE 0 END,
        hour_start = CASE WHEN ${fits} THEN greatest(s.hour_start, ${hourAt}) ELSE s.hour_start END,
        hour_bytes = CASE WHEN ${fits} THEN ${hourBytes} + x.b ELSE s.hour_bytes END,
        newcomer_bytes = CASE WHEN ${fits} THEN ${newcomerBytes} + CASE WHEN x.n THEN x.b ELSE 0 END ELSE s.newcomer_bytes END
      FROM (SELECT ${bytes}::bigint AS b, (SELECT coalesce(sum(bytes), 0) FROM nonce_swept)::bigint AS freed,
              (${newcomerSql(signed.did, now)}) AS n,
              (EXISTS (SELECT 1 FROM ${found}) AND NOT (SELECT used FROM nonce_used)) AS go) AS x
      WHERE s.store = 'signature_nonces'
      RETURNING ${fits} AS fits, x.go AS go),
    nonce_kept AS (
      INSERT INTO signature_nonces (keyid, nonce, expires_at, bytes)
      SELECT ${signed.keyid}, ${signed.nonce}, ${signed.expires.toISOString()}::timestamptz, ${bytes} FROM nonce_store WHERE nonce_store.fits
      ON CONFLICT DO NOTHING RETURNING 1)`;
}

/** The columns that say what nonceCtes did, for the statement's final SELECT. */
export const NONCE_COLUMNS = sql`(SELECT used FROM nonce_used) AS nonce_used, coalesce((SELECT fits FROM nonce_store), false) AS nonce_fits,
  (SELECT count(*) FROM nonce_kept)::int AS nonce_kept`;

export interface NonceOutcome {
  nonce_used: boolean;
  nonce_fits: boolean;
  nonce_kept: number;
}

/**
 * The refusal of a nonce that was not recorded (the caller was found): replayed (recorded before,
 * or by a parallel twin first), or the store's city-wide bound reached. Null when it was recorded.
 */
export async function nonceRefusal(db: Database, signed: VerifiedSignature & { nonce: string }, outcome: NonceOutcome, now: Date): Promise<CityError | null> {
  if (Number(outcome.nonce_kept) === 1) return null;
  if (outcome.nonce_used === true || outcome.nonce_fits === true) return replayed();
  const charge: Charge = { store: "signature_nonces", bytes: rowBytes(signed.keyid, signed.nonce), newcomer: newcomerSql(signed.did, now), now };
  const full = await cityFull(db, charge);
  return new CityError(
    "city_full",
    `${full.detail} (Your signed write was not recorded and changed nothing; a Bearer credential is not counted in this store.)`,
    {
      ...full.options,
      retryAfterSeconds: full.options.retryAfterSeconds ?? secondsToNextHour(now),
    },
  );
}

function replayed(): CityError {
  return new CityError(
    "signature_replayed",
    "That signature's nonce was already used with this key: a nonce is single use until the signature expires. Sign the request again with a fresh nonce (16 to 64 characters). Nothing was changed.",
  );
}

/**
 * Records a signed write's nonce in a statement of its own, for a write that opens its own
 * transactions (a poll, the clinic): atomic alone. A charge whose row a parallel twin inserted
 * first is given back (refusals pay that statement).
 */
export async function recordNonce(db: Database, signed: VerifiedSignature & { nonce: string }, now: Date): Promise<void> {
  const found = sql`(SELECT 1 FROM citizens WHERE did = ${signed.did} AND residency_status <> 'exported' AND ${keyStillValidSql(signed, now)}) caller`;
  const [row] = rowsOf<NonceOutcome & { go: boolean | null }>(
    await db.execute(sql`WITH ${nonceCtes(signed, now, found)} SELECT ${NONCE_COLUMNS}, (SELECT go FROM nonce_store) AS go`),
  );
  if (!row || (row.go === false && row.nonce_used !== true)) throw keyGone();
  if (row.nonce_fits === true && Number(row.nonce_kept) !== 1) {
    await db.execute(sql`WITH released AS (${releaseSql("signature_nonces", sql`${rowBytes(signed.keyid, signed.nonce)}`)}) SELECT 1`);
  }
  const refused = await nonceRefusal(db, signed, row, now);
  if (refused) throw refused;
}

/** The citizen left, or its key was rotated away, between the key's look-up and the write. */
export function keyGone(): CityError {
  return new CityError(
    "unknown_key",
    "The key that signed this request opens no citizen now: it was rotated away before the signature was made, or its citizen exported and left. Nothing was changed.",
  );
}

/** One key of a citizen's JWK Set (GET /api/peers/{did}/keys). */
export interface PublishedRequestKey {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid: string;
  use: "sig";
  alg: "EdDSA";
  nbf: number;
  exp?: number;
}

/**
 * A live citizen's request keys as a JWK Set's keys (current first, then rotated-away keys whose
 * exp has not passed), or null when the DID is unknown or exported. One statement.
 */
export async function publishedRequestKeys(db: Database, did: string, now: Date): Promise<PublishedRequestKey[] | null> {
  type Row = { known: boolean; public_key: string | null; thumbprint: string | null; nbf: Date | string | null; exp: Date | string | null };
  const rows = rowsOf<Row>(
    await db.execute(sql`
      SELECT true AS known, k.public_key, k.thumbprint, k.nbf, k.exp FROM citizens c
      LEFT JOIN request_keys k ON k.did = c.did AND (k.exp IS NULL OR k.exp > ${now.toISOString()}::timestamptz)
      WHERE c.did = ${did} AND c.residency_status <> 'exported'
      ORDER BY k.exp DESC NULLS FIRST, k.nbf DESC`),
  );
  if (rows.length === 0) return null;
  const seconds = (v: Date | string) => Math.floor(new Date(v).getTime() / 1000);
  return rows
    .filter((r) => r.public_key !== null)
    .map((r) => ({
      ...publicJwk(r.public_key!),
      kid: r.thumbprint!,
      use: "sig" as const,
      alg: "EdDSA" as const,
      nbf: seconds(r.nbf!),
      ...(r.exp !== null ? { exp: seconds(r.exp) } : {}),
    }));
}
