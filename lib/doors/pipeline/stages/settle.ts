import { settleLogReceipts } from "@/lib/city/logs/transparency-log";
import type { RequestContext } from "../context";
import { databaseGuard } from "../database-guard";

/**
 * Stage `settle`: once the write committed, every log entry it recorded is integrated and its
 * answer's receipts to come are filled in (lib/city/logs/transparency-log/receipts.ts). A refusal
 * whose writes were kept is thrown now, its entries integrated like any other.
 */
export async function settleAnswer(ctx: RequestContext): Promise<void> {
  const outcome = ctx.outcome!;
  const body = await databaseGuard(() => settleLogReceipts(ctx.db!, ctx.tickets, "kept" in outcome ? null : outcome.body, ctx.now));
  if ("kept" in outcome) throw outcome.kept;
  ctx.answer = { status: outcome.reply.init.status ?? 200, headers: answerHeaders(outcome.reply.init.headers, outcome.body), body, changesAt: ctx.changesAt };
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
