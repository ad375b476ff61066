import { createHash } from "node:crypto";

const NOW_UTC_FIRST = /^\{"now_utc":"[^"]*"/;

/**
 * A JSON answer split at its leading `now_utc` (every JSON door answers it first): the clock
 * changes on every request, the rest only when the content does.
 */
export function splitNowUtc(text: string): { rest: string } | null {
  const match = NOW_UTC_FIRST.exec(text);
  return match ? { rest: text.slice(match[0].length) } : null;
}

/** The answer text with a fresh `now_utc` in place of the one it was built with. */
export function spliceNowUtc(rest: string, now: Date): string {
  return `{"now_utc":"${now.toISOString()}"${rest}`;
}

/**
 * A strong entity tag over the answer's content: the bytes without `now_utc`, so two answers that
 * differ only in the clock share a tag and a poller gets 304 Not Modified.
 */
export function contentTag(text: string): string {
  const content = splitNowUtc(text)?.rest ?? text;
  return `"${createHash("sha256").update(content).digest("base64url").slice(0, 27)}"`;
}

/** RFC 9110 13.1.2: If-None-Match matches by weak comparison, `*` matches any current answer. */
export function matchesIfNoneMatch(header: string | null, tag: string): boolean {
  if (!header) return false;
  if (header.trim() === "*") return true;
  const bare = tag.replace(/^W\//, "");
  return header.split(",").some((t) => t.trim().replace(/^W\//, "") === bare);
}

/**
 * RFC 9110 13.1.3: If-Modified-Since is read only without If-None-Match, and only as a valid HTTP
 * date; the answer is unchanged when it was last modified no later than that date.
 */
export function notModifiedSince(request: Request, lastModified: string): boolean {
  if (request.headers.has("if-none-match")) return false;
  const since = Date.parse(request.headers.get("if-modified-since") ?? "");
  return !Number.isNaN(since) && Date.parse(lastModified) <= since;
}

/** The 304 for a matching tag: no body, the validators and caching headers of the full answer. */
export function notModified(headers: Headers): Response {
  const kept = new Headers();
  for (const name of ["ETag", "Last-Modified", "Cache-Control", "Vary", "Content-Location", "Expires"]) {
    const value = headers.get(name);
    if (value !== null) kept.set(name, value);
  }
  return new Response(null, { status: 304, headers: kept });
}
