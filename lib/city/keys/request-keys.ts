import { sha256 } from "@noble/hashes/sha2.js";
import { hexToBytes } from "@noble/hashes/utils.js";
import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { CityError } from "@/lib/errors";
import { emissionMs, gcraFitsSql, gcraNextSql } from "@/lib/city/bounds";

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
/**
 * How long after `created` a signature may reach the city: a key rotated away signs nothing that
 * arrives later than this after its rotation, and a nonce is kept no longer than this.
 */
export const SIGNATURE_MAX_AGE_SECONDS = 30;
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
 * key rotated away after `created` whose exp has not passed), for a WHERE on `citizens`. With
 * `current`, only the controller key now: a door that changes keys, recovery or residency takes
 * nothing from a key rotated away, whenever its signature was made.
 */
export function keyStillValidSql(signed: VerifiedSignature, now: Date, current = false): SQL {
  // `created` is a whole second: the key was rotated away after the signature only if after that whole second.
  const madeBefore = new Date(signed.created.getTime() + 1000).toISOString();
  const rotatedAfter = current ? sql`false` : sql`(k.rotated_at >= ${madeBefore}::timestamptz AND k.exp > ${now.toISOString()}::timestamptz)`;
  // With `current`, the key is compared with the citizen row's own controller as well: a lock wait's
  // re-check (EvalPlanQual) re-reads that row, while request_keys is read as the statement began.
  const onRow = current ? sql` AND city_key_thumbprint(citizens.controller_public_key) = ${signed.keyid}` : sql``;
  return sql`(EXISTS (SELECT 1 FROM request_keys k WHERE k.did = citizens.did AND k.thumbprint = ${signed.keyid}
    AND (k.exp IS NULL OR ${rotatedAfter}))${onRow})`;
}

/**
 * A key's signed writes are counted on the key's own row (GCRA: each nonce moves nonce_tat on by
 * the emission interval; a nonce that would move it past now + the window is refused), so one key
 * can keep at most about limit + 31 s of its rate in nonces, and no signed write waits for another
 * key's: no city-wide row.
 */
export const SIGNED_WRITES_PER_KEY = { limit: 240, windowSeconds: 60 } as const;

/**
 * The signature nonce store's share per key (issue 43): the most nonces one key can hold at once,
 * its window's limit plus its rate over the longest a nonce is kept (31 s and the clock skew).
 * Each key's count is its own row; the store has no city-wide row for a flood to fill.
 */
export function noncesPerKeyMost(): number {
  const { limit, windowSeconds } = SIGNED_WRITES_PER_KEY;
  return limit + Math.ceil((limit / windowSeconds) * (SIGNATURE_MAX_AGE_SECONDS + 1 + SIGNATURE_CLOCK_SKEW_SECONDS));
}

/**
 * How long a nonce is kept: while a signature carrying it can still be accepted (until expires,
 * and at most 31 s after created), plus the clock skew allowed, so an instance whose clock runs
 * ahead never sweeps a nonce that another still takes.
 */
export function nonceKeptUntil(signed: Pick<VerifiedSignature, "created" | "expires">): Date {
  const skew = SIGNATURE_CLOCK_SKEW_SECONDS * 1000;
  return new Date(Math.min(signed.expires.getTime(), signed.created.getTime() + (SIGNATURE_MAX_AGE_SECONDS + 1) * 1000) + skew);
}

/**
 * The CTEs that record a signed write's nonce, for the statement that also finds its caller
 * (`found`, a CTE of that statement with the caller's row, or none): `nonce_used` (the nonce was
 * already recorded when the statement began), `nonce_swept` (a batch of expired nonces removed),
 * `nonce_rate` (the key's own count: its row's GCRA moved on only when the caller was found and
 * the nonce unused; the UPDATE is computed on the row's latest version, so parallel writes with
 * one key cannot pass it, and writes with other keys never wait for it) and `nonce_kept` (the row,
 * inserted only when counted; a parallel twin that recorded the same nonce first makes it insert
 * nothing). Read with NONCE_COLUMNS.
 */
export function nonceCtes(signed: VerifiedSignature & { nonce: string }, now: Date, found: SQL): SQL {
  const at = sql`${now.toISOString()}::timestamptz`;
  const next = gcraNextSql(SIGNED_WRITES_PER_KEY, sql`k.nonce_tat`, at);
  return sql`
    nonce_used AS (SELECT EXISTS (SELECT 1 FROM signature_nonces WHERE keyid = ${signed.keyid} AND nonce = ${signed.nonce}) AS used),
    nonce_swept AS (
      DELETE FROM signature_nonces d WHERE (d.keyid, d.nonce) IN (
        SELECT keyid, nonce FROM signature_nonces WHERE expires_at < ${at} ORDER BY expires_at LIMIT ${NONCE_SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING 1),
    nonce_go AS (SELECT EXISTS (SELECT 1 FROM ${found}) AND NOT (SELECT used FROM nonce_used) AS go),
    nonce_rate AS (
      UPDATE request_keys k SET nonce_tat = ${next}
      WHERE k.did = ${signed.did} AND k.thumbprint = ${signed.keyid} AND (SELECT go FROM nonce_go)
        AND ${gcraFitsSql(SIGNED_WRITES_PER_KEY, next, at)}
      RETURNING true AS fits),
    nonce_kept AS (
      INSERT INTO signature_nonces (keyid, nonce, expires_at)
      SELECT ${signed.keyid}, ${signed.nonce}, ${nonceKeptUntil(signed).toISOString()}::timestamptz FROM nonce_rate WHERE nonce_rate.fits
      ON CONFLICT DO NOTHING RETURNING 1)`;
}

/** The columns that say what nonceCtes did, for the statement's final SELECT. */
export const NONCE_COLUMNS = sql`(SELECT used FROM nonce_used) AS nonce_used, coalesce((SELECT fits FROM nonce_rate), false) AS nonce_fits,
  (SELECT count(*) FROM nonce_kept)::int AS nonce_kept, (SELECT go FROM nonce_go) AS nonce_go`;

export interface NonceOutcome {
  nonce_used: boolean;
  nonce_fits: boolean;
  nonce_kept: number;
}

/**
 * The refusal of a nonce that was not recorded (the caller was found): replayed (recorded before,
 * or by a parallel twin first), or the key's own rate of signed writes reached. Null when it was recorded.
 */
export function nonceRefusal(outcome: NonceOutcome): CityError | null {
  if (Number(outcome.nonce_kept) === 1) return null;
  if (outcome.nonce_used === true || outcome.nonce_fits === true) return replayed();
  const { limit, windowSeconds } = SIGNED_WRITES_PER_KEY;
  const retry = Math.max(1, Math.ceil(emissionMs(SIGNED_WRITES_PER_KEY) / 1000));
  return new CityError(
    "rate_limited",
    `This key signed more than ${limit} writes in ${windowSeconds} s (counted per key, a rolling window): try again in ${retry} s. Nothing was changed.`,
    { retryAfterSeconds: retry, limit: { name: "signed writes per key", limit, window_seconds: windowSeconds, remaining: 0 } },
  );
}

function replayed(): CityError {
  return new CityError(
    "signature_replayed",
    "That signature's nonce was already used with this key: a nonce is single use until the signature expires. Sign the request again with a fresh nonce (16 to 64 characters). Nothing was changed.",
  );
}

/**
 * Records a signed request's nonce in a statement of its own: for a write that opens its own
 * transactions (a poll, the clinic), for a surface that spends it once before any tool runs (the
 * MCP and A2A POSTs), and for a write whose door refused it (its transaction rolled back with the
 * nonce): atomic alone. `current`: only the key's current controller key opens (DoorKeyRule).
 */
export async function recordNonce(db: Database, signed: VerifiedSignature & { nonce: string }, now: Date, current = false): Promise<void> {
  const found = sql`(SELECT 1 FROM citizens WHERE did = ${signed.did} AND residency_status <> 'exported' AND ${keyStillValidSql(signed, now, current)}) caller`;
  const [row] = rowsOf<NonceOutcome & { nonce_go: boolean | null }>(await db.execute(sql`WITH ${nonceCtes(signed, now, found)} SELECT ${NONCE_COLUMNS}`));
  if (!row || (row.nonce_go === false && row.nonce_used !== true)) throw keyGone();
  const refused = nonceRefusal(row);
  if (refused) throw refused;
}

/**
 * Records the nonce of a signature made with a key from a citizen's key history (keyEverBound),
 * which has no request_keys row to rate: single use as every signed write's nonce, kept as long.
 * Throws signature_replayed when it was recorded before.
 */
export async function recordHistoryNonce(db: Database, signed: VerifiedSignature & { nonce: string }): Promise<void> {
  const kept = rowsOf(
    await db.execute(sql`
      INSERT INTO signature_nonces (keyid, nonce, expires_at)
      VALUES (${signed.keyid}, ${signed.nonce}, ${nonceKeptUntil(signed).toISOString()}::timestamptz)
      ON CONFLICT DO NOTHING RETURNING 1`),
  );
  if (kept.length !== 1) throw replayed();
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
