import { asCityError, CityError } from "@/lib/errors";
import { logFailure } from "@/lib/logger";
import type { AnyDoor, DoorRequest } from "@/lib/doors/door";
import { clientAddress } from "./client-address";
import { type DoorAnswer, requestContext } from "./context";
import { databaseGuard, reachDatabase } from "./database-guard";
import { spendSurfaceNonce } from "./signature";
import { runWay } from "./way";

export type { DoorAnswer };

/**
 * Runs one door for a surface that hands it its arguments (the MCP door, the A2A bridge): the way's
 * stages from `parse` to `settle` (way.ts): the input through the door's schema, the caller, the
 * guard, the handler (a write inside one transaction) and its answer checked against the door's
 * output schema, the receipts settled. Throws CityError (or anything, for the surface to turn into
 * a 500).
 */
export async function invokeDoor(door: AnyDoor, rawInput: unknown, request: DoorRequest): Promise<DoorAnswer> {
  const ctx = requestContext(door, request, { raw: rawInput });
  await runWay(ctx, "parse", "settle");
  return ctx.answer!;
}

/**
 * A signed POST of a surface that runs doors for it (the MCP door, the A2A bridge): its nonce spent
 * once before anything runs (lib/doors/pipeline/signature.ts spendSurfaceNonce), a database outage a clean 503.
 */
export async function spendSignedPost(request: Request): Promise<void> {
  const db = await reachDatabase();
  await databaseGuard(() => spendSurfaceNonce(db, doorRequestOf(request, "POST")));
}

/** What a door sees of an HTTP request, on every surface: its headers and the client address. */
export function doorRequestOf(request: Request, method: string): DoorRequest {
  return { method, url: new URL(request.url), headers: request.headers, ip: clientAddress(request.headers) };
}

/** Logs a failure that is not one of the city's own answers (a bug or an outage), never its message. */
export function logUnexpected(where: string, err: unknown): void {
  if (!(err instanceof CityError) && asCityError(err).code === "internal_error") logFailure(where, err);
}
