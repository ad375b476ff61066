import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens } from "@/db/schema";
import { type Env, env } from "@/lib/env";
import { CityError, type OriginCheck } from "@/lib/errors";
import type { LogReceipt } from "@/lib/tlog/append";
import { appendIdentityLog } from "@/lib/city/logs/identity-log";
import { IDENTITY_ROW_BYTES } from "@/lib/city/keys";
import { requireSlot, type Window, cityWindow, chargeStore, newcomerSql, citizenShare, visitorSubject } from "@/lib/city/bounds";
import { restrictedRefusal } from "@/lib/city/restriction";
import { shareOf } from "@/lib/city/challenge";
import { DnsFailure, queryDns } from "./dns";
import { originDomain, type OriginDomain } from "./domain";
import { FETCH_MAX_BYTES, FETCH_TIMEOUT_MS, fetchWellKnown } from "./guarded-fetch";
import { type OriginMethod, type OriginProof, ORIGIN_PROOF_SECONDS, originProofOf, proofStands } from "./proof-row";

export { type OriginMethod, type OriginProof, ORIGIN_PROOF_SECONDS, originProofOf, proofStands } from "./proof-row";

/*
 * CITY-ORIGIN/1 (docs/origin-proofs.md): a citizen proves that it speaks for the domain of its
 * origin, by a file (`https://<domain>/.well-known/city-did` listing its DID) or a DNS TXT record
 * (`_city.<domain>` = `did=<DID>`). Three steps, deliberately not one transaction: 1. the try is
 * counted (the citizen's, the domain's and the city's hourly windows) and committed; 2. the city
 * looks, outside any transaction, holding no lock or connection meanwhile; 3. a proof found is
 * recorded under the citizen's row lock with its identity log row.
 */

export const ORIGIN_TRIES = { perCitizen: 10, perDomain: 30, windowSeconds: 3600 } as const;

/**
 * The tries one source (an IPv4 /24, an IPv6 /48) may take an hour: its share
 * (CITY_ORIGIN_SOURCE_SHARE_PERCENT, 10) of CITY_ORIGIN_PROOFS_PER_HOUR, 30 of the default 300
 * (issue 43, item 1). Null when the share is the whole hour: the city's own window bounds it then.
 */
export function originSourceShare(config: Env = env()): number | null {
  const share = shareOf(config.CITY_ORIGIN_PROOFS_PER_HOUR, config.CITY_ORIGIN_SOURCE_SHARE_PERCENT);
  return share < config.CITY_ORIGIN_PROOFS_PER_HOUR ? share : null;
}

export function insecureOriginProofs(): boolean {
  return env().CITY_ORIGIN_PROOF_INSECURE === "1";
}

/**
 * The windows of a try, counted in this order: the citizen's own, the domain's, its source's share
 * (where the client address is known: citizens are free, so many of one network could otherwise
 * fill the city's hour, first come), then the city's.
 */
export function originWindows(did: string, domain: string, ip: string | null = null): { window: Window; name: string }[] {
  const hour = ORIGIN_TRIES.windowSeconds;
  // An unknown address is no bucket (one shared bucket would let a few tries lock every citizen out).
  const share = originSourceShare();
  const source =
    ip && share !== null
      ? [
          {
            window: { scope: "origin-source", subject: visitorSubject(ip), limit: share, windowSeconds: hour },
            name: "origin proof tries from your network (its IPv4 /24 or IPv6 /48)",
          },
        ]
      : [];
  return [
    { window: { scope: "origin-citizen", subject: did, limit: ORIGIN_TRIES.perCitizen, windowSeconds: hour }, name: "origin proof tries by this citizen" },
    { window: { scope: "origin-domain", subject: domain, limit: ORIGIN_TRIES.perDomain, windowSeconds: hour }, name: `origin proof tries for ${domain}` },
    ...source,
    {
      // City-wide over stripes (rate-stripes.ts), so tries of different citizens never wait on one row.
      window: cityWindow("origin-city", env().CITY_ORIGIN_PROOFS_PER_HOUR, hour),
      name: "origin proof tries in the whole city",
    },
  ];
}

/** What `did` must publish, in words, for each method. */
export function expectedProof(method: OriginMethod, did: string, domain: OriginDomain): string {
  return method === "https"
    ? `a 200 answer of type text/plain at ${domain.scheme}://${domain.domain}/.well-known/city-did, at most ${FETCH_MAX_BYTES} bytes, with a line that is exactly ${did}`
    : `a TXT record at _city.${domain.host} whose value is exactly did=${did}`;
}

interface CitizenOrigin {
  origin: string;
  residency_status: string;
  tier: string;
  origin_domain: string | null;
}

async function readCitizen(db: Database, did: string, lock: boolean): Promise<CitizenOrigin> {
  const [row] = rowsOf<CitizenOrigin>(
    await db.execute(sql`SELECT origin, residency_status, tier, origin_domain FROM ${citizens} WHERE did = ${did} ${lock ? sql`FOR NO KEY UPDATE` : sql``}`),
  );
  if (!row || row.residency_status === "exported") throw new CityError("unauthorized", "That credential opens no citizen of the city. Nothing was changed.");
  return row;
}

/** The 422 of an origin that names no domain (free text, an IP address): nothing is counted or fetched. */
function unprovable(problem: string, method: OriginMethod): CityError {
  return new CityError("origin_unverified", problem, {
    originCheck: { method, domain: null, looked_at: null, address: null, found: { problem }, expected: "an origin that is a DNS name or a URL" },
  });
}

export interface Verified {
  proof: OriginProof;
  receipt: LogReceipt;
  lookedAt: string;
}

/**
 * Checks the caller's origin now by `method` and records the proof found. Refuses with 422
 * origin_unverified (saying what was found and what was expected) when the proof is not there;
 * a proof that stands is left as it is then (it lapses at its expires_at).
 */
export async function verifyOrigin(db: Database, did: string, method: OriginMethod, now: Date, ip: string | null = null): Promise<Verified> {
  const insecure = insecureOriginProofs();
  const citizen = await readCitizen(db, did, false);
  if (citizen.tier === "restricted") throw restrictedRefusal();
  const named = originDomain(citizen.origin, { insecure });
  if (!named.ok) throw unprovable(named.problem, method);
  const domain = named.value;
  // 1. Counted and committed before the city looks: a try that times out still counts.
  await db.transaction(async (handle) => {
    const tx = handle as unknown as Database;
    for (const { window, name } of originWindows(did, domain.domain, ip)) await requireSlot(tx, window, now, name);
  });
  // 2. The look, outside any transaction.
  const deadline = Date.now() + FETCH_TIMEOUT_MS;
  const expected = expectedProof(method, did, domain);
  const check = method === "https" ? await checkHttps(did, domain, insecure, deadline) : await checkDns(did, domain, deadline);
  if (!check.proven) {
    throw new CityError(
      "origin_unverified",
      `The origin ${domain.domain} is not proven for this citizen: the city looked at ${check.lookedAt} and found ${check.summary}; it expected ${expected}. Nothing was changed${citizen.origin_domain ? " (a proof already recorded stays until its expires_at)" : ""}.`,
      { originCheck: { method, domain: domain.domain, looked_at: check.lookedAt, address: check.address, found: check.found, expected } },
    );
  }
  // 3. Recorded under the citizen's row lock, then the identity log's head (the order of every key event).
  return db.transaction(async (handle) => {
    const tx = handle as unknown as Database;
    const held = await readCitizen(tx, did, true);
    if (held.tier === "restricted") throw restrictedRefusal();
    const expiresAt = new Date(now.getTime() + ORIGIN_PROOF_SECONDS * 1000);
    await chargeStore(tx, { store: "identity_log", bytes: IDENTITY_ROW_BYTES, newcomer: newcomerSql(did, now), now, subject: citizenShare(did) });
    await tx.execute(sql`UPDATE ${citizens} SET origin_domain = ${domain.domain}, origin_method = ${method},
      origin_verified_at = ${now.toISOString()}::timestamptz, origin_expires_at = ${expiresAt.toISOString()}::timestamptz WHERE did = ${did}`);
    const { logReceipt } = await appendIdentityLog(tx, {
      event: "origin-proven",
      did,
      at: now,
      details: { domain: domain.domain, method, expires_at: expiresAt.toISOString() },
    });
    const proof: OriginProof = { domain: domain.domain, method, verified_at: now.toISOString(), expires_at: expiresAt.toISOString() };
    return { proof, receipt: logReceipt, lookedAt: check.lookedAt };
  });
}

/**
 * Drops the caller's proof (standing or lapsed) and records it in the identity log; with none
 * recorded, nothing changes and no row is appended. A drop follows a proof, which was counted and
 * charged, so it is not charged again: a full identity log never keeps a citizen from dropping.
 */
export async function dropOrigin(db: Database, did: string, now: Date): Promise<{ dropped: OriginProof | null; receipt: LogReceipt | null }> {
  const [row] = rowsOf<{
    origin_domain: string | null;
    origin_method: string | null;
    origin_verified_at: Date | string | null;
    origin_expires_at: Date | string | null;
  }>(
    await db.execute(
      sql`SELECT origin_domain, origin_method, origin_verified_at, origin_expires_at FROM ${citizens} WHERE did = ${did} AND residency_status <> 'exported' FOR NO KEY UPDATE`,
    ),
  );
  if (!row) throw new CityError("unauthorized", "That credential opens no citizen of the city. Nothing was changed.");
  const dropped = originProofOf({
    originDomain: row.origin_domain,
    originMethod: row.origin_method,
    originVerifiedAt: row.origin_verified_at === null ? null : new Date(row.origin_verified_at),
    originExpiresAt: row.origin_expires_at === null ? null : new Date(row.origin_expires_at),
  });
  if (!dropped) return { dropped: null, receipt: null };
  await db.execute(
    sql`UPDATE ${citizens} SET origin_domain = NULL, origin_method = NULL, origin_verified_at = NULL, origin_expires_at = NULL WHERE did = ${did}`,
  );
  const { logReceipt } = await appendIdentityLog(db, {
    event: "origin-dropped",
    did,
    at: now,
    details: { domain: dropped.domain, method: dropped.method, was_standing: proofStands(dropped, now) },
  });
  return { dropped, receipt: logReceipt };
}

interface Check {
  proven: boolean;
  lookedAt: string;
  address: string | null;
  summary: string;
  found: OriginCheck["found"];
}

const LINES_SHOWN = 10;
const CHARS_SHOWN = 200;
const cap = (text: string) => (text.length > CHARS_SHOWN ? `${text.slice(0, CHARS_SHOWN)}…` : text);

async function checkHttps(did: string, domain: OriginDomain, insecure: boolean, deadline: number): Promise<Check> {
  const outcome = await fetchWellKnown(domain, { insecure, deadline });
  if (outcome.kind === "refused") {
    return {
      proven: false,
      lookedAt: outcome.url,
      address: outcome.address,
      summary: `nothing it could read: ${outcome.reason}`,
      found: { problem: outcome.reason },
    };
  }
  const lines = outcome.body.split(/\r?\n/).map((l) => l.trim());
  const plain = outcome.contentType !== null && /^text\/plain\s*(;|$)/i.test(outcome.contentType);
  const listed = lines.includes(did);
  const found = {
    status: outcome.status,
    content_type: outcome.contentType,
    bytes: outcome.bytes,
    lines: lines.filter(Boolean).slice(0, LINES_SHOWN).map(cap),
  };
  const base = { lookedAt: outcome.url, address: outcome.address, found };
  if (outcome.status !== 200) return { ...base, proven: false, summary: `status ${outcome.status}` };
  if (!plain) return { ...base, proven: false, summary: `content type ${outcome.contentType ?? "(none)"}, not text/plain` };
  if (!listed)
    return {
      ...base,
      proven: false,
      summary: `${found.lines.length ? `${lines.filter(Boolean).length} line(s)` : "no line"}, none of them this citizen's DID`,
    };
  return { ...base, proven: true, summary: "this citizen's DID" };
}

async function checkDns(did: string, domain: OriginDomain, deadline: number): Promise<Check> {
  const name = `_city.${domain.host}`;
  const lookedAt = `TXT ${name}`;
  let records: string[];
  try {
    records = await queryDns(name, "TXT", deadline);
  } catch (error) {
    const problem = error instanceof DnsFailure ? error.message : "the DNS query failed";
    return { proven: false, lookedAt, address: null, summary: `no answer: ${problem}`, found: { problem } };
  }
  const found = { records: records.slice(0, LINES_SHOWN).map(cap) };
  if (records.map((r) => r.trim()).includes(`did=${did}`)) return { proven: true, lookedAt, address: null, summary: "this citizen's record", found };
  return { proven: false, lookedAt, address: null, summary: records.length ? `${records.length} TXT record(s), none did=<this DID>` : "no TXT record", found };
}
