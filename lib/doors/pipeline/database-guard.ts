import { getDb } from "@/lib/city/database";
import { type Database } from "@/db/client";
import { CityError } from "@/lib/errors";
import { logFailure } from "@/lib/logger";

/**
 * The database as every stage reaches it: an outage, or a transaction the database ended to break
 * a cycle, becomes a clean 503 that says nothing was changed; everything else passes through.
 */

export async function reachDatabase(): Promise<Database> {
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
export async function databaseGuard<T>(work: () => Promise<T>): Promise<T> {
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
