import type { RequestContext } from "../context";
import { heldDocument, isConstantDocument } from "../constant-documents";
import { heldVersionedAnswer } from "../read-cache";

/**
 * Stage `memory`: a public reading whose answer memory holds is served from there, and the door does
 * not run: a constant document (constant-documents.ts) or a versioned read whose tables have not
 * changed (read-cache.ts). When the answer is being built by another request, this one waits for
 * it; when none is held, this request builds it (`keeper`: the tag stage keeps the door's answer).
 */
export async function fromMemory(ctx: RequestContext): Promise<void> {
  const found = isConstantDocument(ctx.door, ctx.http!) ? await heldDocument(ctx.door) : await heldVersionedAnswer(ctx.door, ctx.http!);
  if ("held" in found) ctx.held = await found.held;
  else ctx.keeper = found.keeper;
}
