import type { z } from "zod";
import { type DoorContext, ownsTransactions, Reply } from "@/lib/doors/door";
import { registry } from "@/lib/doors/registry";
import { CityError } from "@/lib/errors";
import { logLine } from "@/lib/logger";
import type { RequestContext } from "../context";

/**
 * Stage `run`: the door's handler (inside the write's transaction for a write), its answer checked
 * against the door's output schema there, so a write whose answer is wrong rolls back. A refusal
 * that must be counted (`keepWrites`) commits the transaction's writes and is thrown once the
 * receipts are settled.
 */
export async function runDoor(ctx: RequestContext): Promise<void> {
  const { door, now, request } = ctx;
  const input = (ctx.parsed as { input: unknown }).input;
  const changesAt = (moment: Date | null) => {
    if (moment && (!ctx.changesAt || moment < ctx.changesAt)) ctx.changesAt = moment;
  };
  const context = { db: ctx.handle!, now, request, caller: ctx.caller!, door, registry, changesAt } satisfies DoorContext;
  let result: unknown;
  try {
    result = await door.run(context, input);
  } catch (err) {
    if (err instanceof CityError && err.options.keepWrites) {
      ctx.outcome = { kept: err };
      return;
    }
    throw err;
  }
  const reply = result instanceof Reply ? result : new Reply(result);
  const checked = door.output.safeParse(reply.body);
  if (!checked.success) {
    // A door that answers outside its published schema is a bug; never send the bad answer.
    logLine("error", "answer outside schema", { door: door.name, paths: checked.error.issues.map((i: z.core.$ZodIssue) => i.path.join(".")).join(", ") });
    // A door with its own transactions may have committed already; the answer must not say otherwise.
    const kept = ownsTransactions(door, input, request)
      ? " What this door commits before it answers (such as a counted attempt) stands; nothing else was changed."
      : " Nothing was changed.";
    throw new CityError("internal_error", `The city could not finish this request.${kept}`);
  }
  ctx.outcome = { reply, body: checked.data as unknown };
}
