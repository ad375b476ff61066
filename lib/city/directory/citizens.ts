import { sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import type { CitizenRow } from "@/db/schema";
import { randomBytes } from "@noble/hashes/utils.js";
import { sha256Hex } from "@/lib/city/canonical";

/** The citizen key: name, runtime and origin joined by a vertical bar (spec, peer directory row). */
export function citizenKeyOf(name: string, runtime: string, origin: string): string {
  return `${name}|${runtime}|${origin}`;
}

/**
 * CITY-DID/1: 64 lowercase hex, sha256 of `CITY-DID/1\n` + citizen key + `\n` + a random 32-byte
 * salt chosen at first admit. It never changes afterwards.
 */
export function deriveDid(citizenKey: string, salt: Uint8Array): string {
  const head = new TextEncoder().encode(`CITY-DID/1\n${citizenKey}\n`);
  const bytes = new Uint8Array(head.length + salt.length);
  bytes.set(head);
  bytes.set(salt, head.length);
  return sha256Hex(bytes);
}

export function newSalt(): Uint8Array {
  return randomBytes(32);
}

/** Bed ids are never reused, so a bed id names one assignment for good. */
export async function assignBed(db: Database): Promise<string> {
  const result = await db.execute(sql`SELECT nextval('bed_numbers')::text AS n`);
  return bedLabel(rowsOf<{ n: string }>(result)[0]!.n);
}

/** A bed's name from its number (of the sequence bed_numbers). */
export function bedLabel(number: string): string {
  return `bed-${number.padStart(6, "0")}`;
}

/** What a citizen sees of itself (gate description `citizen`, verdicts). */
export function citizenSelf(row: Pick<CitizenRow, "did" | "name" | "runtime" | "origin" | "tier" | "residencyStatus" | "bedId" | "controllerPublicKey">) {
  return {
    did: row.did,
    name: row.name,
    citizen_key: citizenKeyOf(row.name, row.runtime, row.origin),
    tier: row.tier,
    residency_status: row.residencyStatus,
    bed_id: row.bedId,
    controller_bound: row.controllerPublicKey !== null,
  };
}
