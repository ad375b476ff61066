import { and, desc, eq, ne, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, recoveries, recoveryCodes, RECOVERY_STEPS, RECOVERY_VIAS } from "@/db/schema";
import { CityError } from "@/lib/errors";
import type { LogReceipt } from "@/lib/tlog/append";
import { hashCredential, isCredential, mintCredential, replaceSecret } from "./credentials";
import { takeChain, requireSlot, slotRefusal, type Window, citizenSubject, visitorSubject } from "@/lib/city/bounds";
import { appendIdentityLog } from "@/lib/city/logs/identity-log";
import { atLeast, type Authority, cancelOpenSteps, countKeyEvent, openStepOf, outranked } from "./key-authority";
import { citizenKeys, commitmentAfterMove, thumbprintOrNone, uncommittedProblem } from "./pre-rotation";
import { keyEverBound } from "./key-history";
import { jwkThumbprint } from "./request-keys";

/**
 * Recovery with a public window (CITY-KEYS/1): with a delay set, a recovery code (or a committed
 * next key) opens a recovery instead of resetting the secret. It is public (GET /api/recover/{did},
 * the identity log, the citizen's poll); the current secret or key cancels it before opens_after;
 * anyone may hold it (a reason from a fixed list, 2 per recovery, each +24 h); after opens_after
 * its opener alone completes it with the ticket it was shown once.
 *
 * Locks, in the order of every appender: the citizen's row, then the recovery's row, then the
 * identity log's head. Every change of a recovery's row is one guarded UPDATE, so of a completion
 * and a hold or a cancel landing together exactly one finds the row as it needs it.
 */

export const RECOVERY_DELAY_HOURS = { min: 24, max: 168 } as const;
export const HOLDS_PER_RECOVERY = 2;
export const HOLD_HOURS = 24;
export const OPENS_PER_DAY = 3;

/** Why anyone may hold a recovery: a fixed list, so a hold carries no free text. */
export const HOLD_REASONS = ["not-the-owner", "owner-reachable", "suspected-theft", "verifying-owner", "disputed-control"] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

const HOUR = 3_600_000;

export { RECOVERY_STEPS, RECOVERY_VIAS };

export interface HoldLimits {
  perAddressPerDay: number;
  /** Anonymous holds per source (an IPv4 /24 or IPv6 /48, or the citizen whose credential came with the hold) per hour. */
  perSourcePerHour: number;
}

/** Holds its own citizen may make with its credential per day: never counted against the anonymous bounds. */
export const OWNER_HOLDS_PER_DAY = 4;

export interface DelaySet {
  /** The delay standing after this request. */
  delayHours: number;
  /** A lowering waits out the delay that stood when it was asked: the step opened for it. */
  pending: (Opened & { lowerTo: number }) | null;
  receipt: LogReceipt;
}

/**
 * Sets the recovery delay (0, or 24 to 168 hours) of a proven caller whose row its door holds
 * locked. Raising it (or setting it where none stands) applies at once; lowering a delay that
 * stands weakens the citizen's protections, so it opens a step instead that completes only after
 * the delay standing now, in public, cancellable by the same credential or one above it.
 */
export async function setRecoveryDelay(db: Database, did: string, hours: number, by: "secret" | "controller", now: Date): Promise<DelaySet> {
  if (hours !== 0 && (hours < RECOVERY_DELAY_HOURS.min || hours > RECOVERY_DELAY_HOURS.max)) {
    throw new CityError("bad_request", `A recovery delay is 0 or ${RECOVERY_DELAY_HOURS.min} to ${RECOVERY_DELAY_HOURS.max} hours.`);
  }
  const citizen = await citizenKeys(db, did, { lock: true });
  if (!citizen) throw new CityError("not_found", "No citizen of the city has that DID.");
  await countKeyEvent(db, did, by, now);
  if (hours < citizen.delay) {
    const opened = await openRecovery(db, { did, via: by, step: "lower-delay", lowerTo: hours, nextPublicKey: null, delayHours: citizen.delay }, now);
    return { delayHours: citizen.delay, pending: { ...opened, lowerTo: hours }, receipt: opened.receipt };
  }
  // A raise undoes a lowering waiting to complete, when this credential may cancel it: the delay
  // asked last by the higher credential stands.
  const open = await openStepOf(db, did);
  if (open?.step === "lower-delay" && atLeast(by, open.via)) await cancelOpenSteps(db, did, now, "delay-raised");
  await db.update(citizens).set({ recoveryDelayHours: hours }).where(eq(citizens.did, did));
  return { delayHours: hours, pending: null, receipt: (await appendIdentityLog(db, { event: "delay-set", did, at: now, details: { hours } })).logReceipt };
}

export interface Opened {
  ticket: string;
  openedAt: Date;
  opensAfter: Date;
  receipt: LogReceipt;
}

/** What a step is and who asked it: a recovery (a code, a committed next key, the controller key) or a lowering of the delay. */
export type StepRequest =
  | { did: string; step?: "recovery"; via: "code" | "next-key" | "controller"; nextPublicKey: string | null; delayHours: number }
  | { did: string; step: "lower-delay"; via: "secret" | "controller"; lowerTo: number; nextPublicKey: null; delayHours: number };

/**
 * Opens a step for a proven opener (a spent code, a committed next key's signature, the
 * controller's signature, or the secret or key lowering the delay) whose citizen's row it holds
 * locked: counted against the citizen's 3 opens a day, at most one open.
 */
export async function openRecovery(db: Database, o: StepRequest, now: Date): Promise<Opened> {
  await requireSlot(db, opensWindow(o.did, o.via), now, `steps opened with this citizen's ${o.via}`);
  // One step at a time, but never a lower credential's in the way of a higher one: it is cancelled.
  const open = await openStepOf(db, o.did);
  if (open && open.via !== o.via && atLeast(o.via, open.via)) await cancelOpenSteps(db, o.did, now, "outranked");
  const step = o.step ?? "recovery";
  const lowerTo = o.step === "lower-delay" ? o.lowerTo : null;
  const ticket = mintCredential("ticket");
  const opensAfter = new Date(now.getTime() + o.delayHours * HOUR);
  const inserted = await db.execute(sql`
    INSERT INTO ${recoveries} (did, via, step, lower_to, ticket_hash, next_public_key, opened_at, opens_after)
    VALUES (${o.did}, ${o.via}, ${step}, ${lowerTo}, ${hashCredential(ticket)}, ${o.nextPublicKey}, ${now.toISOString()}::timestamptz, ${opensAfter.toISOString()}::timestamptz)
    ON CONFLICT (did) WHERE state = 'open' DO NOTHING RETURNING id`);
  if (rowsOf(inserted).length !== 1) {
    throw new CityError(
      "conflict",
      "A step is already open for this citizen (a recovery, or a lowering of its delay: GET /api/recover/{did}): one at a time. Nothing was changed.",
    );
  }
  const details = {
    step,
    via: o.via,
    opens_after: opensAfter.toISOString(),
    ...(lowerTo !== null ? { lower_to: lowerTo } : {}),
    ...(o.nextPublicKey ? { next_key: jwkThumbprint(o.nextPublicKey) } : {}),
  };
  const { logReceipt } = await appendIdentityLog(db, { event: "recovery-opened", did: o.did, at: now, details });
  return { ticket, openedAt: now, opensAfter, receipt: logReceipt };
}

/** Opens are counted per citizen and credential, so spending a lower credential's opens never blocks a higher one. */
function opensWindow(did: string, via: Authority) {
  return { scope: "recover-open", subject: `${did}/${via}`, limit: OPENS_PER_DAY, windowSeconds: 86_400 };
}

/**
 * Cancels the open step of a proven caller (its current secret or key) whose row its door holds
 * locked, before opens_after, when its credential is the one that asked the step or outranks it.
 */
export async function cancelRecovery(db: Database, did: string, by: "secret" | "controller", now: Date): Promise<LogReceipt> {
  const open = await openStepOf(db, did);
  if (open && !atLeast(by, open.via)) throw outranked(open.via, by);
  await countKeyEvent(db, did, by, now, { defends: true });
  const at = sql`${now.toISOString()}::timestamptz`;
  const cancelled = rowsOf<{ id: number; step: string }>(
    await db.execute(sql`UPDATE ${recoveries} SET state = 'cancelled', closed_at = ${at}
      WHERE did = ${did} AND state = 'open' AND opens_after > ${at} RETURNING id, step`),
  );
  if (cancelled.length !== 1) throw await notOpen(db, did, now, "cancel");
  const details = { recovery: Number(cancelled[0]!.id), step: cancelled[0]!.step, by };
  return (await appendIdentityLog(db, { event: "recovery-cancelled", did, at: now, details })).logReceipt;
}

/**
 * Anyone's hold: it exists before anything is counted (an unknown recovery costs no window), then
 * its bounds, then one guarded UPDATE. opens_after moves to 24 h past the later of itself and now.
 *
 * No first-come city-wide pool (issue 43, item 5): an anonymous hold counts against its client
 * address's daily bound and its source's hourly bound (the citizen whose credential came with it,
 * else its address's prefix: an IPv4 /24, an IPv6 /48), and takes one of the recovery's 2
 * anonymous holds. A hold made with a credential of the recovery's own citizen, or signed with a
 * key ever bound to its DID (`signedWith`: the keyid of a signature verified over the request;
 * a key rotated away however long ago, lib/city/keys/key-history.ts), counts against none of these:
 * only against that citizen's own OWNER_HOLDS_PER_DAY, so no flood of holds elsewhere can stop an
 * owner from slowing a thief, even one who rotated the owner's key away.
 */
export async function holdRecovery(
  db: Database,
  h: { did: string; reason: HoldReason; ip: string | null; caller: { did: string } | null; signedWith?: string | null; limits: HoldLimits },
  now: Date,
): Promise<{ holds: number; opensAfter: Date; receipt: LogReceipt; owner: boolean }> {
  // An exported citizen's step was closed by its export; the citizen's status is read too, so none is held after.
  const [open] = await db
    .select({ id: recoveries.id, holds: recoveries.holds })
    .from(recoveries)
    .innerJoin(citizens, and(eq(citizens.did, recoveries.did), ne(citizens.residencyStatus, "exported")))
    .where(and(eq(recoveries.did, h.did), eq(recoveries.state, "open")));
  if (!open) throw await notOpen(db, h.did, now, "hold");
  const owner = h.caller?.did === h.did || (h.signedWith ? (await keyEverBound(db, h.did, h.signedWith)) !== null : false);
  if (!owner && open.holds >= HOLDS_PER_RECOVERY) throw holdsSpent();
  const windows = holdWindows(h, owner);
  const outcome = windows.length ? await takeChain(db, { windows, ceiling: null, subjectsMax: 0 }, now) : null;
  if (outcome?.kind === "refused") {
    const w = outcome.window;
    const what = owner
      ? "holds by this recovery's own citizen"
      : w.scope === HOLD_SOURCE_SCOPE
        ? "recovery holds from this source"
        : "recovery holds from this address";
    throw slotRefusal(w, what, outcome.slot.retryAfterSeconds);
  }
  const at = sql`${now.toISOString()}::timestamptz`;
  const later = sql`greatest(opens_after, ${at}) + interval '${sql.raw(String(HOLD_HOURS))} hours'`;
  const [held] = rowsOf<{ holds: number; opens_after: Date | string }>(
    await db.execute(
      owner
        ? sql`UPDATE ${recoveries} SET opens_after = ${later} WHERE id = ${open.id} AND state = 'open' RETURNING holds, opens_after`
        : sql`UPDATE ${recoveries} SET holds = holds + 1, opens_after = ${later}
      WHERE id = ${open.id} AND state = 'open' AND holds < ${HOLDS_PER_RECOVERY} RETURNING holds, opens_after`,
    ),
  );
  if (!held) throw (await recoveryOf(db, open.id))?.state === "open" ? holdsSpent() : await notOpen(db, h.did, now, "hold");
  const opensAfter = new Date(held.opens_after);
  const { logReceipt } = await appendIdentityLog(db, {
    event: "recovery-held",
    did: h.did,
    at: now,
    details: { recovery: open.id, reason: h.reason, holds: Number(held.holds), opens_after: opensAfter.toISOString(), ...(owner ? { by: "owner" } : {}) },
  });
  return { holds: Number(held.holds), opensAfter, receipt: logReceipt, owner };
}

/** The scope of the anonymous holds' hourly bound per source. */
export const HOLD_SOURCE_SCOPE = "recover-hold-source";

/** The windows a hold counts against: its owner's own, or the address's day and the source's hour. */
function holdWindows(h: { did: string; ip: string | null; caller: { did: string } | null; limits: HoldLimits }, owner: boolean): Window[] {
  if (owner) return [{ scope: "recover-hold-owner", subject: h.did, limit: OWNER_HOLDS_PER_DAY, windowSeconds: 86_400 }];
  const windows: Window[] = [];
  if (h.ip && h.limits.perAddressPerDay > 0)
    windows.push({ scope: "recover-hold-address", subject: h.ip, limit: h.limits.perAddressPerDay, windowSeconds: 86_400 });
  // A source the city cannot tell apart (no credential, no address) is no bucket: one shared
  // bucket would let a few holds stop every other; such holds are bounded by 2 per recovery alone.
  const source = h.caller ? citizenSubject(h.caller.did) : h.ip ? visitorSubject(h.ip) : null;
  if (source && h.limits.perSourcePerHour > 0)
    windows.push({ scope: HOLD_SOURCE_SCOPE, subject: source, limit: h.limits.perSourcePerHour, windowSeconds: 3600 });
  return windows;
}

function holdsSpent(): CityError {
  return new CityError("limit_reached", `This recovery holds ${HOLDS_PER_RECOVERY} holds already, the most it may. Nothing was changed.`, {
    limit: { name: "holds per recovery", limit: HOLDS_PER_RECOVERY, remaining: 0 },
  });
}

const NOT_OPENER = "That ticket opens no recovery of this citizen: it is unknown, or its recovery was cancelled or completed.";

/** What a completed step gave: a new secret (a recovery), or the lowered delay (a lower-delay step). */
export type Completed =
  { step: "recovery"; secret: string; controller: string; receipt: LogReceipt } | { step: "lower-delay"; delayHours: number; receipt: LogReceipt };

/**
 * The opener completes: its ticket proves it (read with no lock), then the citizen's row is
 * locked (the order of every key event: the citizen's row before the step's), then one guarded UPDATE closes the step only while it is open and past opens_after.
 * A lower-delay step sets the delay it asked. A recovery gives the opener a new secret; a committed
 * next key that opened it becomes the controller, checked again against the commitment standing
 * now (a key withdrawn meanwhile completes nothing: the recovery is cancelled), the rest of the
 * commitment left standing; a code's completion unbinds the old controller; every older
 * credential dies: the secret, every gate session token, every unused recovery code, and the old
 * controller key.
 */
export async function completeRecovery(db: Database, did: string, ticket: string, now: Date): Promise<Completed> {
  if (!isCredential(ticket, "ticket")) throw new CityError("unauthorized", NOT_OPENER);
  const [mine] = await db
    .select({ id: recoveries.id, via: recoveries.via })
    .from(recoveries)
    .where(and(eq(recoveries.did, did), eq(recoveries.ticketHash, hashCredential(ticket)), eq(recoveries.state, "open")));
  if (!mine) throw new CityError("unauthorized", NOT_OPENER);
  const citizen = await citizenKeys(db, did, { lock: true });
  if (!citizen) throw new CityError("unauthorized", NOT_OPENER);
  await countKeyEvent(db, did, mine.via, now, { defends: true });
  const at = sql`${now.toISOString()}::timestamptz`;
  const [closed] = rowsOf<{ via: Authority; step: "recovery" | "lower-delay"; lower_to: number | null; next_public_key: string | null }>(
    await db.execute(sql`UPDATE ${recoveries} SET state = 'completed', closed_at = ${at}
      WHERE id = ${mine.id} AND state = 'open' AND opens_after <= ${at} RETURNING via, step, lower_to, next_public_key`),
  );
  if (!closed) throw await notOpen(db, did, now, "complete");
  if (closed.step === "lower-delay") {
    const hours = Number(closed.lower_to);
    await db.update(citizens).set({ recoveryDelayHours: hours }).where(eq(citizens.did, did));
    const details = { recovery: mine.id, step: closed.step, via: closed.via, hours };
    const { logReceipt } = await appendIdentityLog(db, { event: "recovery-completed", did, at: now, details });
    return { step: "lower-delay", delayHours: hours, receipt: logReceipt };
  }
  if (closed.via === "next-key" && uncommittedProblem(citizen.hashes, closed.next_public_key!) !== null) {
    await db.update(recoveries).set({ state: "cancelled" }).where(eq(recoveries.id, mine.id));
    const details = { recovery: mine.id, step: closed.step, via: closed.via, reason: "key-withdrawn" };
    await appendIdentityLog(db, { event: "recovery-cancelled", did, at: now, details });
    throw new CityError(
      "conflict",
      "The committed next key that opened this recovery is no longer committed (a rotation withdrew it): the recovery is cancelled and completes nothing. The controller and the commitment standing are unchanged.",
      { keepWrites: true },
    );
  }
  const controller = closed.via === "next-key" ? closed.next_public_key : closed.via === "controller" ? citizen.key : null;
  // A committed key spends its own hash (the others stay committed); a code's or the controller's completion leaves the commitment as it stands.
  const hashes = closed.via === "next-key" ? commitmentAfterMove(citizen.hashes, controller!) : citizen.hashes;
  await db.update(citizens).set({ controllerPublicKey: controller, nextKeyHashes: hashes }).where(eq(citizens.did, did));
  await db
    .update(recoveryCodes)
    .set({ voidedAt: now })
    .where(and(eq(recoveryCodes.did, did), sql`${recoveryCodes.usedAt} IS NULL AND ${recoveryCodes.voidedAt} IS NULL`));
  const secret = await replaceSecret(db, did, now);
  const { logReceipt } = await appendIdentityLog(db, {
    event: "recovery-completed",
    did,
    at: now,
    details: {
      recovery: mine.id,
      step: closed.step,
      via: closed.via,
      from: thumbprintOrNone(citizen.key),
      to: thumbprintOrNone(controller),
      next_key_hashes: hashes ? hashes.join(",") : null,
    },
  });
  return { step: "recovery", secret, controller: thumbprintOrNone(controller), receipt: logReceipt };
}

async function recoveryOf(db: Database, id: number) {
  const [row] = await db.select().from(recoveries).where(eq(recoveries.id, id));
  return row ?? null;
}

/** The problem of a step that found no recovery as it needs one: none open (404), not yet open (409), or past its window (409). */
async function notOpen(db: Database, did: string, now: Date, step: "hold" | "cancel" | "complete"): Promise<CityError> {
  const latest = await latestRecovery(db, did);
  if (!latest || latest.state !== "open") {
    return new CityError(
      step === "complete" ? "conflict" : "not_found",
      `No recovery is open for this citizen${latest ? ` (the latest was ${latest.state})` : ""}. Nothing was changed.`,
    );
  }
  const when = latest.opensAfter.toISOString();
  if (step === "complete") return new CityError("conflict", `This recovery opens after ${when}: it cannot be completed before. Nothing was changed.`);
  return new CityError("conflict", `This recovery's window closed at ${when}: only its opener may complete it now. Nothing was changed.`);
}

async function latestRecovery(db: Database, did: string) {
  const [row] = await db.select().from(recoveries).where(eq(recoveries.did, did)).orderBy(desc(recoveries.openedAt), desc(recoveries.id)).limit(1);
  return row ?? null;
}

export interface PublicRecovery {
  did: string;
  delay_hours: number;
  pre_rotation: boolean;
  recovery: {
    state: "open" | "cancelled" | "completed";
    step: (typeof RECOVERY_STEPS)[number];
    via: Authority;
    lower_to: number | null;
    opened_at: string;
    opens_after: string;
    holds: number;
    holds_left: number;
    closed_at: string | null;
  } | null;
}

/** The public state of a citizen's recovery: its delay, whether pre-rotation stands, and its latest recovery. Null when unknown or exported. */
export async function readPublicRecovery(db: Database, did: string): Promise<PublicRecovery | null> {
  const [row] = rowsOf<{
    delay: number;
    hashes: string[] | null;
    state: NonNullable<PublicRecovery["recovery"]>["state"] | null;
    via: Authority | null;
    step: (typeof RECOVERY_STEPS)[number] | null;
    lower_to: number | null;
    opened_at: Date | string | null;
    opens_after: Date | string | null;
    holds: number | null;
    closed_at: Date | string | null;
  }>(
    await db.execute(sql`SELECT c.recovery_delay_hours AS delay, c.next_key_hashes AS hashes, r.state, r.via, r.step, r.lower_to, r.opened_at, r.opens_after, r.holds, r.closed_at
      FROM ${citizens} c LEFT JOIN LATERAL (
        SELECT * FROM ${recoveries} WHERE did = c.did ORDER BY opened_at DESC, id DESC LIMIT 1) r ON true
      WHERE c.did = ${did} AND c.residency_status <> 'exported'`),
  );
  if (!row) return null;
  const iso = (v: Date | string | null) => (v === null ? null : new Date(v).toISOString());
  return {
    did,
    delay_hours: Number(row.delay),
    pre_rotation: row.hashes !== null,
    recovery: row.state
      ? {
          state: row.state,
          step: row.step!,
          via: row.via!,
          lower_to: row.lower_to === null ? null : Number(row.lower_to),
          opened_at: iso(row.opened_at)!,
          opens_after: iso(row.opens_after)!,
          holds: Number(row.holds),
          holds_left: HOLDS_PER_RECOVERY - Number(row.holds),
          closed_at: iso(row.closed_at),
        }
      : null,
  };
}
