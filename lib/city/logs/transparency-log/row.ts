import canonicalize from "canonicalize";
import type { LogRow } from "@/db/schema";
import { canonicalJson, sha256Hex } from "@/lib/city/canonical";

/** A log's row format (both logs): the published row, its chained hash and its leaf data in the tree. */

export const GENESIS_HASH = "0".repeat(64);

/** A log row as published: the fixed fields plus the event's own details. */
export type PublishedLogRow<E extends string = string> = { seq: number; event: E; did: string; at: string; hash: string; prev_hash: string } & Record<
  string,
  string | number | boolean | null
>;

/** What a row's hash covers: the published row without its own hash. */
export function hashOf(row: Omit<PublishedLogRow, "hash">): string {
  return sha256Hex(canonicalJson(row));
}

export function publishLogRow(row: LogRow): PublishedLogRow {
  return { seq: row.seq, event: row.event, did: row.did, at: row.at.toISOString(), ...row.details, hash: row.hash, prev_hash: row.prevHash };
}

/** The leaf data of a row: the UTF-8 of its RFC 8785 canonical JSON as GET /api/residency/log (or /api/identity/log) publishes it. */
export function leafDataOf(row: PublishedLogRow): Uint8Array {
  return new TextEncoder().encode(canonicalize(row)!);
}
