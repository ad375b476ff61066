import type { RequestContext } from "../context";

/**
 * Stage `parse`: the input through the door's schema. A failure is kept, not thrown: the caller is
 * resolved first (a 401 comes before a 400), and whether the input parsed decides whether that
 * look-up also marks the caller seen (a malformed request is not seen). The guard throws it.
 */
export function parseInput(ctx: RequestContext): void {
  try {
    ctx.parsed = { ok: true, input: ctx.door.input.parse(ctx.raw) };
  } catch (error) {
    ctx.parsed = { ok: false, error };
  }
}
