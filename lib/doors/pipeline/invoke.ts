import type { z } from "zod";
import { getDb } from "@/lib/city/database";
import { type Database } from "@/db/client";
import { env } from "@/lib/env";
import { asCityError, CityError } from "@/lib/errors";
import { logFailure, logLine } from "@/lib/logger";
import {
  type AnyDoor,
  type Caller,
  citizenLockOf,
  DEFAULT_MAX_BODY_BYTES,
  type DoorContext,
  type DoorRequest,
  isWrite,
  ownsTransactions,
  Reply,
} from "@/lib/doors/door";
import { restrictedRefusal } from "@/lib/city/restriction";
import { identityLog } from "@/lib/city/logs/identity-log";
import { checkLogIdentity } from "@/lib/city/logs/residency-log";
import { settleLogReceipts, withLogAppends } from "@/lib/city/logs/transparency-log";
import { activeSigningKey } from "@/lib/city/signing";
import { resolveCaller } from "./caller";
import { recordNonce } from "@/lib/city/keys";
import { signedCaller, spendSurfaceNonce } from "./signature";
import { clientAddress } from "./client-address";
import { registry } from "@/lib/doors/registry";

export { logFailure };

export interface DoorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** The earliest moment the door said its answer changes with no write; null: only a write changes it. */
  changesAt: Date | null;
}

/**
 * Runs one door for any surface (HTTP route, MCP tool): authenticate, parse the input with the
 * door's schema, run the handler (a write inside one transaction), and check the answer against
 * the door's output schema. Throws CityError (or anything, for the surface to turn into a 500).
 */
export async function invokeDoor(door: AnyDoor, rawInput: unknown, request: DoorRequest): Promise<DoorAnswer> {
  const db = await reachDatabase();
  const now = new Date();
  // Parsed first, refused in the same order as ever (401 before 400): whether it parsed decides
  // whether the caller's look-up also marks it seen (a malformed request is not seen).
  const parsed = parseInput(door, rawInput);
  const ownTransactions = parsed.ok && ownsTransactions(door, parsed.input, request);
  const inTransaction = isWrite(door) && !ownTransactions;
  // A write reads its caller inside its own transaction, under the citizen's row lock (below);
  // a read, a door with its own transactions, or a malformed request reads it here.
  let caller: Caller | null = null;
  if (!inTransaction || !parsed.ok) {
    caller = await guard(() => resolveCaller(db, door, request, now, { markSeen: parsed.ok, spendNonce: parsed.ok }));
    if (!parsed.ok) throw parsed.error;
  }
  const input = (parsed as { input: unknown }).input;
  let changesAt: Date | null = null;
  const noteChange = (moment: Date | null) => {
    if (moment && (!changesAt || moment < changesAt)) changesAt = moment;
  };
  // The answer is checked inside the transaction, so a write whose answer is wrong rolls back.
  const run = async (handle: Database, caller: Caller) => {
    if (isWrite(door)) refuseIfRestricted(door, caller, input);
    const result = await door
      .run({ db: handle, now, request, caller, door, registry, changesAt: noteChange } satisfies DoorContext, input)
      .catch((err: unknown) => {
        // A refusal that must be counted commits the transaction's writes, then answers the error.
        if (err instanceof CityError && err.options.keepWrites) return new KeptRefusal(err);
        throw err;
      });
    if (result instanceof KeptRefusal) return result;
    const reply = result instanceof Reply ? result : new Reply(result);
    const checked = door.output.safeParse(reply.body);
    if (!checked.success) {
      // A door that answers outside its published schema is a bug; never send the bad answer.
      logLine("error", "answer outside schema", { door: door.name, paths: checked.error.issues.map((i: z.core.$ZodIssue) => i.path.join(".")).join(", ") });
      // A door with its own transactions may have committed already; the answer must not say otherwise.
      const kept = ownTransactions
        ? " What this door commits before it answers (such as a counted attempt) stands; nothing else was changed."
        : " Nothing was changed.";
      throw new CityError("internal_error", `The city could not finish this request.${kept}`);
    }
    return { reply, body: checked.data as unknown };
  };
  // A write may sign (a log row's checkpoint): the key is read (on a new city, made) before the
  // write's transaction, so this instance keeps it (activeSigningKey keeps none read inside one).
  // So is each log's identity (recorded on a new city, lib/city/logs/transparency-log/identity.ts), kept by the
  // instance the same way: an append then signs with no statement of its own, or refuses if this
  // instance's configuration is not the log's.
  if (isWrite(door)) {
    await guard(() => activeSigningKey(db));
    await guard(() => checkLogIdentity(db, now));
    // The identity log's too (CITY-KEYS/1): a key event's append then signs with no statement of its own.
    await guard(() => identityLog.checkLogIdentity(db, now));
  }
  let signedWrite = false;
  // The log entries the write records (pending) are integrated once it committed; its answer's
  // receipts are filled in then (lib/city/logs/transparency-log/receipts.ts).
  const { value: outcome, tickets } = await withLogAppends(() =>
    guard(() =>
      inTransaction
        ? db.transaction(async (tx) => {
            const handle = tx as Database;
            // The credential look-up is the write's first statement and locks the citizen's row
            // (no round trip of its own): export holds it exclusively, so this write is either in the
            // export or refused as exported, and a tier changed a moment ago is the tier read here.
            const held = await resolveCaller(handle, door, request, now, { markSeen: true, hold: citizenLockOf(door) });
            signedWrite = held.credential === "signature";
            return run(handle, held);
          })
        : run(db, caller!),
    ).catch(async (err: unknown) => {
      // A signed write its door refused rolled its nonce back with it: spent again on its own, so
      // the refused request cannot be replayed later (when the door would take it).
      if (signedWrite) await spendRefusedNonce(db, door, request, now);
      throw err;
    }),
  );
  const settled = await guard(() => settleLogReceipts(db, tickets, outcome instanceof KeptRefusal ? null : outcome.body, now));
  if (outcome instanceof KeptRefusal) throw outcome.error;
  return { status: outcome.reply.init.status ?? 200, headers: answerHeaders(outcome.reply.init.headers, outcome.body), body: settled, changesAt };
}

/**
 * A door's headers, and Retry-After when its answer says when to try again (`retry_after_seconds`:
 * a gate verdict filtered by a full window, a ward note read but not filed), as every problem that
 * carries it does (http.ts problemResponse): one rule for every answer, not one per door.
 */
function answerHeaders(headers: Record<string, string> = {}, body: unknown): Record<string, string> {
  const retry = (body as { retry_after_seconds?: unknown } | null)?.retry_after_seconds;
  return typeof retry === "number" ? { "Retry-After": String(retry), ...headers } : headers;
}

/**
 * A signed POST of a surface that runs doors for it (the MCP door, the A2A bridge): its nonce spent
 * once before anything runs (lib/doors/pipeline/signature.ts spendSurfaceNonce), a database outage a clean 503.
 */
export async function spendSignedPost(request: Request): Promise<void> {
  const db = await reachDatabase();
  await guard(() => spendSurfaceNonce(db, doorRequestOf(request, "POST")));
}

/** Records the nonce of a signed write whose transaction rolled back; its own failure changes no answer (the refusal stands). */
async function spendRefusedNonce(db: Database, door: AnyDoor, request: DoorRequest, now: Date): Promise<void> {
  try {
    const signing = signedCaller(db, request, now);
    const signed = signing ? (await signing).signed : null;
    if (signed?.nonce) await recordNonce(db, { ...signed, nonce: signed.nonce }, now, door.currentKeyOnly === true);
  } catch {
    // Replayed meanwhile, key gone, or the database away: the nonce is spent or opens nothing.
  }
}

function parseInput(door: AnyDoor, rawInput: unknown): { ok: true; input: unknown } | { ok: false; error: unknown } {
  try {
    return { ok: true, input: door.input.parse(rawInput) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** What a door sees of an HTTP request, on every surface: its headers and the client address. */
export function doorRequestOf(request: Request, method: string): DoorRequest {
  return { method, url: new URL(request.url), headers: request.headers, ip: clientAddress(request.headers) };
}

/** The 413 of a body (or tool arguments) over the door's published size. */
export function bodyTooLarge(limit: number): CityError {
  return new CityError("payload_too_large", `This door accepts bodies of at most ${limit} bytes.`, { limit: { name: "body_bytes", limit } });
}

/** The limit the HTTP door applies to its body, applied to arguments that arrive another way (MCP, A2A). */
export function checkBodySize(door: AnyDoor, args: unknown): void {
  const limit = door.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (Buffer.byteLength(JSON.stringify(args)) > limit) throw bodyTooLarge(limit);
}

/** Logs a failure that is not one of the city's own answers (a bug or an outage), never its message. */
export function logUnexpected(where: string, err: unknown): void {
  if (!(err instanceof CityError) && asCityError(err).code === "internal_error") logFailure(where, err);
}

/**
 * The restricted check of refusing doors: the tier was read with the caller, under the citizen's
 * row lock the write holds exclusively (a refusing door may change the tier itself: a proof, a
 * third refusal), so a restriction committed a moment ago is seen and none can commit meanwhile.
 */
function refuseIfRestricted(door: AnyDoor, caller: Caller, input: unknown): void {
  if (door.whenRestricted !== "refuse" || caller.kind !== "citizen" || !caller.did) return;
  if (caller.tier === "restricted" && !door.openWhileRestricted?.(input)) throw restrictedRefusal();
}

class KeptRefusal {
  constructor(readonly error: CityError) {}
}

async function reachDatabase(): Promise<Database> {
  try {
    return await getDb();
  } catch (err) {
    logFailure("database", err);
    throw new CityError("unavailable", "The city's records cannot be reached right now. Nothing was changed; try again shortly.", {
      retryAfterSeconds: 5,
    });
  }
}

/** Database outages and transactions the database ended to break a cycle become a clean 503; everything else passes through unchanged. */
async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof CityError) throw err;
    if (isTransactionConflict(err)) {
      logFailure("database conflict", err);
      throw new CityError(
        "unavailable",
        "This request and another were each waiting for what the other held, and the database ended this one to free both. Nothing was changed; send it again.",
        {
          retryAfterSeconds: 1,
        },
      );
    }
    if (isDatabaseUnreachable(err)) {
      logFailure("database", err);
      throw new CityError("unavailable", "The city's records cannot be reached right now. Nothing was changed; try again shortly.", {
        retryAfterSeconds: 5,
      });
    }
    throw err;
  }
}

const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
  "53300",
]);

/** An error and what it wraps (Drizzle's cause, the Neon driver's event error), at most five deep. */
function* errorChain(err: unknown): Generator<unknown> {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    yield e;
    e = (e as { cause?: unknown }).cause ?? (e as { error?: unknown }).error;
  }
}

const codeOf = (e: unknown) => (e as { code?: unknown }).code;

export function isDatabaseUnreachable(err: unknown): boolean {
  for (const e of errorChain(err)) {
    const code = codeOf(e);
    if (typeof code === "string" && UNREACHABLE_CODES.has(code)) return true;
    // At any depth: a write's first step is taking a connection for its transaction, and a pool's
    // connect rejects with the driver's own error, unwrapped by Drizzle.
    if (e instanceof Error && /connection terminated|connection error|not queryable|terminating connection|websocket|socket hang up|closed/i.test(e.message))
      return true;
    // The Neon driver rejects with the WebSocket's error or close event when its proxy cannot be
    // reached or the socket drops mid-query (a backend ended, the relay gone).
    if (isWebSocketEvent(e)) return true;
  }
  return false;
}

/** A deadlock the database broke (40P01) or a serialization failure (40001): the transaction was rolled back whole. */
export function isTransactionConflict(err: unknown): boolean {
  for (const e of errorChain(err)) if (codeOf(e) === "40P01" || codeOf(e) === "40001") return true;
  return false;
}

function isWebSocketEvent(e: unknown): boolean {
  const type = (e as { type?: unknown } | null)?.type;
  return typeof e === "object" && e !== null && !(e instanceof Error) && (type === "error" || type === "close") && "target" in e;
}
