import type { RequestContext } from "../context";
import { notModified } from "../etag";

/** Stage `send`: the HTTP answer; a 304 keeps only the validators and caching headers (etag.ts notModified). */
export function sendAnswer(ctx: RequestContext): void {
  const { status, headers, body, notModified: unchanged } = ctx.outgoing!;
  ctx.response = unchanged ? notModified(headers) : new Response(body, { status, headers });
}
