import { restrictedRefusal } from "@/lib/city/restriction";
import { isWrite } from "@/lib/doors/door";
import type { RequestContext } from "../context";

/**
 * Stage `guard`: what the caller may not do here. Input that did not parse is refused now, once the
 * caller is known. A restricted citizen is refused a refusing door's write: its tier was read with
 * the caller, under the citizen's row lock the write holds exclusively (a refusing door may change
 * the tier itself: a proof, a third refusal), so a restriction committed a moment ago is seen and
 * none can commit meanwhile.
 */
export function guardDoor(ctx: RequestContext): void {
  const { door, caller, parsed } = ctx;
  if (!parsed!.ok) throw parsed!.error;
  if (!isWrite(door) || door.whenRestricted !== "refuse" || caller!.kind !== "citizen" || !caller!.did) return;
  if (caller!.tier === "restricted" && !door.openWhileRestricted?.(parsed!.input)) throw restrictedRefusal();
}
