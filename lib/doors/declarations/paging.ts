import { type DoorContext, Reply } from "@/lib/doors/door";

/**
 * A list page's answer: the body carries the next page's cursor on every page (null on the last),
 * and the same next page is in the Link header (RFC 8288) when there is one.
 */
export function pageReply<T>(ctx: DoorContext, body: T, next: Record<string, string | number> | null, headers: Record<string, string> = {}): T | Reply<T> {
  if (!next) return body;
  const url = new URL(ctx.request.url);
  for (const [key, value] of Object.entries(next)) url.searchParams.set(key, String(value));
  return new Reply(body, { headers: { ...headers, Link: `<${url.pathname}${url.search}>; rel="next"` } });
}
