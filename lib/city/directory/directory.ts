import { and, asc, eq, gt, isNotNull, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, type CitizenRow, type RUNTIMES } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { citizenKeyOf } from "./citizens";
import { LIMITS } from "@/lib/city/protocols";
import { originProofOf } from "@/lib/city/origin";
import { jwkThumbprint } from "@/lib/city/keys";

export const MESSAGE_NOTE = "Write to this citizen by DID. A directory row is not a bed: mail reaches any known citizen.";

export function peerRow(row: CitizenRow, now: Date) {
  const seenRecently = row.lastSeenAt !== null && now.getTime() - row.lastSeenAt.getTime() <= LIMITS.presenceSeconds * 1000;
  return {
    fingerprint: row.did,
    citizen_key: citizenKeyOf(row.name, row.runtime, row.origin),
    name: row.name,
    runtime: row.runtime,
    origin: row.origin,
    bed_id: row.bedId,
    bound_at: row.boundAt.toISOString(),
    residency_status: row.residencyStatus as "bound" | "away",
    proven_did: row.residencyStatus === "bound" ? row.provenDid : null,
    proven_method: row.residencyStatus === "bound" ? row.provenMethod : null,
    last_seen_at: row.lastSeenAt?.toISOString() ?? null,
    // The keyid its signed requests carry (CITY-SIG/1): the RFC 7638 thumbprint of its controller key.
    key_thumbprint: row.controllerPublicKey ? jwkThumbprint(row.controllerPublicKey) : null,
    // CITY-ORIGIN/1: whether it proved its origin's domain, how, and until when (lapsed once expires_at is past).
    origin_proof: originProofOf(row),
    // Present only when bound, holding a real bed, and seen within 24 hours; a bound row with no
    // bed is stale residue, and silence is away, not deletion.
    present: row.residencyStatus === "bound" && row.bedId !== null && seenRecently,
    next: { message: { method: "POST" as const, path: "/api/message" as const, to: row.did, note: MESSAGE_NOTE } },
  };
}

export type PeerRow = ReturnType<typeof peerRow>;

/** When the first standing origin proof of this page lapses (a listing of the proven then drops it); null: none stands. */
export function originLapsesAt(rows: readonly { origin_proof: { expires_at: string } | null }[], now: Date): Date | null {
  let earliest = Infinity;
  for (const row of rows) {
    const at = row.origin_proof ? Date.parse(row.origin_proof.expires_at) : Infinity;
    if (at > now.getTime()) earliest = Math.min(earliest, at);
  }
  return Number.isFinite(earliest) ? new Date(earliest) : null;
}

/**
 * When a `present` on this page next turns false with no write: the earliest last_seen_at of a
 * present row plus 24 hours, and a millisecond (present holds through the 24th hour). Null: none can.
 */
export function presenceChangesAt(rows: readonly { present: boolean; last_seen_at: string | null }[]): Date | null {
  let earliest = Infinity;
  for (const row of rows) if (row.present && row.last_seen_at) earliest = Math.min(earliest, Date.parse(row.last_seen_at));
  return Number.isFinite(earliest) ? new Date(earliest + LIMITS.presenceSeconds * 1000 + 1) : null;
}

export interface DirectoryFilters {
  /** Bound and holding a real bed (the spec's bed-only rule). */
  presentOnly: boolean;
  runtime?: (typeof RUNTIMES)[number];
  /** Bound and proven: the rows that publish a proven_did. */
  provenOnly?: boolean;
  /** Only citizens whose origin proof stands at this moment (CITY-ORIGIN/1; a lapsed one does not). */
  originProvenAt?: Date;
}

/** The directory's filters as SQL; exported citizens are never listed nor found. */
export function filterConditions(filters: DirectoryFilters): SQL[] {
  // Written out (not a parameter) so the planner matches the partial indexes' predicate.
  const where: SQL[] = [sql`${citizens.residencyStatus} <> 'exported'`];
  if (filters.presentOnly) where.push(eq(citizens.residencyStatus, "bound"), isNotNull(citizens.bedId));
  if (filters.provenOnly) where.push(eq(citizens.residencyStatus, "bound"), isNotNull(citizens.provenDid));
  if (filters.runtime) where.push(eq(citizens.runtime, filters.runtime));
  // IS NOT NULL written out too, for the partial index citizens_origin_proven_order.
  if (filters.originProvenAt) where.push(isNotNull(citizens.originExpiresAt), gt(citizens.originExpiresAt, filters.originProvenAt));
  return where;
}

interface Cursor {
  boundAt: Date;
  did: string;
}

export function encodeCursor(row: { bound_at: string; fingerprint: string }): string {
  return Buffer.from(`${row.bound_at}|${row.fingerprint}`).toString("base64url");
}

function decodeCursor(cursor: string): Cursor {
  const [at = "", did = ""] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const boundAt = new Date(at);
  // Only the exact form this directory issues: anything else could name a moment the database
  // cannot hold, and that must be a 400, never a 500.
  const issuedHere = /^(?!0000)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(at) && !Number.isNaN(boundAt.getTime()) && boundAt.toISOString() === at;
  if (!issuedHere || !/^[0-9a-f]{64}$/.test(did)) {
    throw new CityError("bad_request", "cursor: not a cursor this directory issued.");
  }
  return { boundAt, did };
}

/**
 * Known citizens in a stable order (bound_at, then DID), one keyset page at a time. Exported
 * citizens are excluded; `presentOnly` keeps citizens that are bound and hold a real bed,
 * `runtime` one runtime, `provenOnly` the bound and proven.
 */
export async function listPeers(
  db: Database,
  options: DirectoryFilters & { limit: number; cursor?: string; now: Date },
): Promise<{ peers: PeerRow[]; nextCursor: string | null }> {
  const filters = filterConditions(options);
  if (options.cursor) {
    const { boundAt, did } = decodeCursor(options.cursor);
    filters.push(or(gt(citizens.boundAt, boundAt), and(eq(citizens.boundAt, boundAt), gt(citizens.did, did)))!);
  }
  const rows = await db
    .select()
    .from(citizens)
    .where(and(...filters))
    .orderBy(asc(citizens.boundAt), asc(citizens.did))
    .limit(options.limit + 1);
  const peers = rows.slice(0, options.limit).map((r) => peerRow(r, options.now));
  const last = peers[peers.length - 1];
  return { peers, nextCursor: rows.length > options.limit && last ? encodeCursor(last) : null };
}

/** One listed citizen's row by its DID; null for an unknown or exported DID (never listed). */
export async function readPeerRow(db: Database, did: string, now: Date): Promise<PeerRow | null> {
  const [row] = await db
    .select()
    .from(citizens)
    .where(and(eq(citizens.did, did), sql`${citizens.residencyStatus} <> 'exported'`));
  return row ? peerRow(row, now) : null;
}
