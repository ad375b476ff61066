import { bytesToHex, randomBytes } from "@noble/hashes/utils.js";
import { sha256Hex } from "@/lib/city/canonical";
import { and, eq, isNull, ne, sql, type SQL } from "drizzle-orm";
import { executePrepared, rowsOf } from "@/db/sql";
import { type Database } from "@/db/client";
import { CityError } from "@/lib/errors";
import { citizens, sessionTokens, type CitizenRow } from "@/db/schema";
import { keyStillValidSql, NONCE_COLUMNS, nonceCtes, type NonceOutcome, nonceRefusal, type VerifiedSignature } from "./request-keys";

/**
 * The city's own credentials: a fixed prefix, 256 random bits as hex and an 8-hex checksum, so
 * that the content scanner can recognise them and a typo is caught before any database look-up.
 * Only their sha256 is ever stored.
 */
export const CREDENTIAL_PREFIXES = { secret: "city_sk_", session: "city_st_", recovery: "city_rc_", ticket: "city_rt_" } as const;
export type CredentialKind = keyof typeof CREDENTIAL_PREFIXES;

export const CREDENTIAL_PATTERN = /city_(sk|st|rc|rt)_[0-9a-f]{72}/g;

function checksum(prefix: string, body: string): string {
  return sha256Hex(prefix + body).slice(0, 8);
}

export function mintCredential(kind: CredentialKind): string {
  const prefix = CREDENTIAL_PREFIXES[kind];
  const body = bytesToHex(randomBytes(32));
  return prefix + body + checksum(prefix, body);
}

/** True when the string is a well-formed credential of that kind with a valid checksum. */
export function isCredential(value: string, kind: CredentialKind): boolean {
  const prefix = CREDENTIAL_PREFIXES[kind];
  if (!value.startsWith(prefix) || value.length !== prefix.length + 72) return false;
  const body = value.slice(prefix.length, prefix.length + 64);
  const sum = value.slice(prefix.length + 64);
  return /^[0-9a-f]{72}$/.test(body + sum) && checksum(prefix, body) === sum;
}

export function hashCredential(value: string): string {
  return sha256Hex(value);
}

/** The bearer token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(headers: Headers): string | null {
  const header = headers.get("authorization");
  const match = header?.match(/^Bearer[ ]+([^\s]+)\s*$/i);
  return match?.[1] ?? null;
}

/** What a live Bearer token opens: the citizen, and whether it is the secret or a lesser session token. */
export interface Presented {
  citizen: HeldCitizen;
  credential: "secret" | "session";
  /** The session token's id (its sha256), for a session token only. */
  tokenId?: string;
}

/**
 * The citizen a Bearer token opens, or null. A DID, a look receipt or anything else that is not a
 * live citizen secret or gate session token opens nothing. With `seenBefore`, the same statement
 * marks the opened citizen seen at `now` when it was last seen before that moment (never an
 * exported one): the presence mark costs no round trip of its own. The look-up of every citizen's
 * request outside a write's transaction: holdCitizen's statement without a lock, a named prepared
 * statement reading only what a caller is (BENCHMARKS.md: the whole citizen row through the query
 * builder cost the poll 0.4 ms of JavaScript and a parse and plan on every call).
 */
export async function citizenForToken(db: Database, token: string, now: Date, seenBefore: Date | null = null): Promise<Presented | null> {
  const opened = await citizenOpenedByToken(db, token, now, null, seenBefore);
  if (!opened) return null;
  const { credential, tokenId, ...citizen } = opened;
  return { citizen, credential, ...(tokenId ? { tokenId } : {}) };
}

/** How a write holds the citizen's row: shared beside other writes, or exclusive (lifecycle and tier changes). */
export type CitizenLock = "shared" | "exclusive";

/** What a write needs of its caller, read under the citizen's row lock. */
export interface HeldCitizen {
  did: string;
  tier: CitizenRow["tier"];
  residencyStatus: CitizenRow["residencyStatus"];
  bedId: string | null;
}

/**
 * The citizen a Bearer token opens, its row locked until the write's transaction ends (FOR SHARE,
 * or FOR NO KEY UPDATE when exclusive), in the one statement that also marks it seen. Export takes
 * the row exclusively, so a write either runs before the export (and is in it) or after (and sees
 * `exported`). The seen mark updates the row, which a lock in the same statement could not see
 * (a row changed by its own statement is skipped): when the mark applies, its update is the lock.
 */
export function heldCitizenForToken(
  db: Database,
  token: string,
  now: Date,
  mode: CitizenLock,
  seenBefore: Date | null,
): Promise<(HeldCitizen & { credential: "secret" | "session"; tokenId?: string }) | null> {
  return citizenOpenedByToken(db, token, now, mode, seenBefore);
}

/** heldCitizenForToken, or with no lock (mode null) the look-up of citizenForToken. */
async function citizenOpenedByToken(
  db: Database,
  token: string,
  now: Date,
  mode: CitizenLock | null,
  seenBefore: Date | null,
): Promise<(HeldCitizen & { credential: "secret" | "session"; tokenId?: string }) | null> {
  const secret = isCredential(token, "secret");
  if (!secret && !isCredential(token, "session")) return null;
  const hash = hashCredential(token);
  const opens = secret
    ? sql`${citizens.secretHash} = ${hash}`
    : sql`${citizens.did} IN (SELECT ${sessionTokens.did} FROM ${sessionTokens} WHERE ${sessionTokens.tokenHash} = ${hash} AND ${sessionTokens.revokedAt} IS NULL AND ${sessionTokens.expiresAt} > ${now.toISOString()}::timestamptz)`;
  const { row } = await holdCitizen(db, opens, now, mode, seenBefore);
  if (!row) return null;
  return { ...row, credential: secret ? "secret" : "session", ...(secret ? {} : { tokenId: hash }) };
}

/**
 * The citizen a verified request signature names, held as heldCitizenForToken holds a Bearer's, in
 * the one statement that also records the signature's nonce (nonceCtes): the key is checked again
 * under the lock (rotated away before the signature was made, or at all with `current`; or the
 * citizen exported, re-read once the lock is granted as a Bearer's status is: null), and the nonce
 * is recorded only when the citizen was found. A write's first statement, as for a Bearer.
 */
export async function heldCitizenForSignature(
  db: Database,
  signed: VerifiedSignature,
  now: Date,
  mode: CitizenLock,
  seenBefore: Date | null,
  options: { current?: boolean } = {},
): Promise<(HeldCitizen & { credential: "signature" }) | null> {
  const opens = sql`${citizens.did} = ${signed.did} AND ${citizens.residencyStatus} <> 'exported' AND ${keyStillValidSql(signed, now, options.current ?? false)}`;
  const nonce = signed.nonce;
  const { row, outcome } = await holdCitizen(db, opens, now, mode, seenBefore, nonce === null ? null : (found) => nonceCtes({ ...signed, nonce }, now, found));
  if (!row) return null;
  if (nonce !== null && outcome) {
    const refused = nonceRefusal(outcome);
    if (refused) throw refused;
  }
  return { ...row, credential: "signature" };
}

/**
 * The caller's row, locked until the write's transaction ends (FOR SHARE, or FOR NO KEY UPDATE
 * when exclusive; no lock with mode null, for a look-up outside a transaction), in the one statement that also marks it seen (and, given `more`, does more with
 * the caller found: the nonce of a signed request). The seen mark updates the row, which a lock in
 * the same statement could not see (a row changed by its own statement is skipped): when the mark
 * applies, its update is the lock.
 */
async function holdCitizen(
  db: Database,
  opens: SQL,
  now: Date,
  mode: CitizenLock | null,
  seenBefore: Date | null,
  more: ((found: SQL) => SQL) | null = null,
): Promise<{ row: HeldCitizen | null; outcome: NonceOutcome | null }> {
  const lock = mode === null ? sql`` : mode === "exclusive" ? sql.raw("FOR NO KEY UPDATE") : sql.raw("FOR SHARE");
  const stale = seenBefore ? sql`(${citizens.lastSeenAt} IS NULL OR ${citizens.lastSeenAt} < ${seenBefore.toISOString()}::timestamptz)` : sql`false`;
  const result = await executePrepared(
    db,
    sql`
    WITH seen AS (
      UPDATE ${citizens} SET last_seen_at = ${now.toISOString()}::timestamptz
      WHERE ${opens} AND ${citizens.residencyStatus} <> 'exported' AND ${stale}
      RETURNING did, tier, residency_status, bed_id
    ), held AS (
      SELECT did, tier, residency_status, bed_id FROM ${citizens} WHERE ${opens} AND NOT EXISTS (SELECT 1 FROM seen) ${lock}
    ), found AS (SELECT * FROM seen UNION ALL SELECT * FROM held LIMIT 1)${more ? sql`, ${more(sql`found`)}` : sql``}
    SELECT caller.*${more ? sql`, ${NONCE_COLUMNS}` : sql``} FROM (SELECT 1) one LEFT JOIN found caller ON true`,
  );
  type Row = { did: string | null; tier: HeldCitizen["tier"]; residency_status: HeldCitizen["residencyStatus"]; bed_id: string | null } & Partial<NonceOutcome>;
  const [row] = rowsOf<Row>(result);
  if (!row || row.did === null) return { row: null, outcome: null };
  const outcome = more ? { nonce_used: row.nonce_used === true, nonce_fits: row.nonce_fits === true, nonce_kept: Number(row.nonce_kept ?? 0) } : null;
  return {
    row: {
      did: row.did,
      tier: row.tier,
      residencyStatus: row.residency_status,
      bedId: row.bed_id,
    },
    outcome,
  };
}

/** A new citizen secret; the old one dies, and so does every live gate session token. */
export async function replaceSecret(db: Database, did: string, now: Date): Promise<string> {
  const secret = mintCredential("secret");
  const updated = await db
    .update(citizens)
    .set({ secretHash: hashCredential(secret) })
    .where(and(eq(citizens.did, did), ne(citizens.residencyStatus, "exported")))
    .returning({ did: citizens.did });
  if (updated.length !== 1)
    throw new CityError("unauthorized", "That recovery proof is not valid: the code is unknown, spent or voided, or the signature does not verify.");
  await db
    .update(sessionTokens)
    .set({ revokedAt: now })
    .where(and(eq(sessionTokens.did, did), isNull(sessionTokens.revokedAt)));
  return secret;
}
