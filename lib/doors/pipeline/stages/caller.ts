import { citizenLockOf } from "@/lib/doors/door";
import { resolveCaller } from "../caller";
import type { RequestContext } from "../context";

/**
 * Stage `caller`: who is asking. Inside a write's transaction (way.ts) the look-up is the
 * transaction's first statement and holds the citizen's row until it ends, and marks it seen;
 * elsewhere it marks the caller seen and spends a signed request's nonce only when the input
 * parsed (a malformed request is not seen and spends nothing).
 */
export async function resolveDoorCaller(ctx: RequestContext): Promise<void> {
  const { door, request, now } = ctx;
  const parsed = ctx.parsed!.ok;
  ctx.caller = ctx.inTransaction
    ? await resolveCaller(ctx.handle!, door, request, now, { markSeen: true, hold: citizenLockOf(door) })
    : await resolveCaller(ctx.handle!, door, request, now, { markSeen: parsed, spendNonce: parsed });
  ctx.signed = ctx.inTransaction && ctx.caller.credential === "signature";
}
