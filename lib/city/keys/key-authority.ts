import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { recoveries } from "@/db/schema";
import { CityError } from "@/lib/errors";
import type { LogReceipt } from "@/lib/tlog/append";
import { appendIdentityLog } from "@/lib/city/logs/identity-log";
import { requireSlot, chargeStore, newcomerSql, citizenShare } from "@/lib/city/bounds";

/*
 * Who outranks whom (CITY-KEYS/1): a committed next key outranks the controller key, which
 * outranks the citizen secret, which outranks a recovery code. A step asked with one credential
 * may be cancelled, while it waits out the recovery delay, by that credential or one above it; a
 * rotation to a committed key (the highest) cancels every step waiting.
 */

/** The credentials that ask for key events, lowest first. */
export const AUTHORITIES = ["code", "secret", "controller", "next-key"] as const;
export type Authority = (typeof AUTHORITIES)[number];

/** Whether `a` may undo what `b` asked: the same credential, or one that outranks it. */
export function atLeast(a: Authority, b: Authority): boolean {
  return AUTHORITIES.indexOf(a) >= AUTHORITIES.indexOf(b);
}

/** The authority of a door's proven caller: its secret, or a request signed with its controller key. */
export function authorityOf(credential: "secret" | "signature" | "session" | undefined): "secret" | "controller" {
  return credential === "signature" ? "controller" : "secret";
}

/** Key events a citizen may ask per hour with each of its credentials (so a lower one cannot spend a higher one's). */
export const KEY_EVENTS_PER_HOUR = 20;
/** What one identity log row counts in the identity_log store: its facts, its tree nodes and its checkpoint. */
export const IDENTITY_ROW_BYTES = 2048;

/**
 * Counts a key event before it is appended, in its transaction, under the citizen's row lock: the
 * citizen's hourly rate for this credential, then the identity log's city-wide hourly bound (the
 * identity_log store) for an event asked with the secret or a code, the credentials every free
 * identity holds. What a controller key or a committed key asks, and what only `defends` a citizen
 * (a cancellation, a completion of a step already counted), is never refused by the city-wide
 * bound: a flood of other citizens cannot stop an owner taking its keys back. Those are bounded
 * per citizen and credential.
 */
export async function countKeyEvent(db: Database, did: string, by: Authority, now: Date, { defends = false } = {}): Promise<void> {
  await requireSlot(
    db,
    { scope: "key-events", subject: `${did}/${by}`, limit: KEY_EVENTS_PER_HOUR, windowSeconds: 3600 },
    now,
    `key events asked with this citizen's ${by}`,
  );
  if (!defends && (by === "code" || by === "secret"))
    await chargeStore(db, { store: "identity_log", bytes: IDENTITY_ROW_BYTES, newcomer: newcomerSql(did, now), now, subject: citizenShare(did) });
}

/** The open step of a citizen, if any: what it does and which credential asked it. */
export interface OpenStep {
  step: "recovery" | "lower-delay";
  via: Authority;
}

export async function openStepOf(db: Database, did: string): Promise<OpenStep | null> {
  const [row] = rowsOf<OpenStep>(await db.execute(sql`SELECT step, via FROM ${recoveries} WHERE did = ${did} AND state = 'open'`));
  return row ?? null;
}

/**
 * Cancels every open step of a citizen whose row the caller holds locked (a rotation to a
 * committed key, an export, a step of a higher credential, a raise of the delay over a lowering),
 * each with its identity log row naming why. Called before the caller's own append, so the step's
 * row is locked before the identity log's head, the order of every key event (a hold takes the
 * same two). The receipts of the rows.
 */
export async function cancelOpenSteps(
  db: Database,
  did: string,
  now: Date,
  reason: "rotated" | "exported" | "outranked" | "delay-raised",
): Promise<LogReceipt[]> {
  const at = sql`${now.toISOString()}::timestamptz`;
  const cancelled = rowsOf<{ id: number | string; step: string; via: string }>(
    await db.execute(sql`UPDATE ${recoveries} SET state = 'cancelled', closed_at = ${at} WHERE did = ${did} AND state = 'open' RETURNING id, step, via`),
  );
  const receipts: LogReceipt[] = [];
  for (const c of cancelled) {
    const details = { recovery: Number(c.id), step: c.step, via: c.via, reason };
    receipts.push((await appendIdentityLog(db, { event: "recovery-cancelled", did, at: now, details })).logReceipt);
  }
  return receipts;
}

/** The 403 of a credential that would undo a step asked by one that outranks it. */
export function outranked(asked: Authority, by: Authority): CityError {
  return new CityError(
    "forbidden",
    `This step was asked with the citizen's ${asked}, which outranks the ${by} this request carries (a committed next key outranks the controller key, which outranks the secret, which outranks a recovery code): only the ${asked}${asked === "next-key" ? "" : " or a credential above it"} may cancel it; a committed next key cancels every step by rotating (POST /api/keys/rotate). Nothing was changed.`,
  );
}
