import { env } from "@/lib/env";
import type { AnyDoor } from "@/lib/doors/door";
import type { ConstantDocument, DoorAnswer, Outgoing, RequestContext } from "../context";
import { contentTag, matchesIfNoneMatch, notModifiedSince } from "../etag";

const CACHE_HEADERS = {
  static: "public, max-age=60, stale-while-revalidate=600",
  live: "no-store",
  private: "private, no-store",
} as const;

/**
 * Stage `tag`: the answer as it will be sent, with its caching headers and, for a reading's 200, its
 * ETag over the content without the clock (a matching If-None-Match gives 304 with no body; so does
 * an If-Modified-Since a constant document was not modified after). An answer this request built
 * for memory is kept first (memory.ts), then served as the held ones are.
 */
export async function tagAnswer(ctx: RequestContext): Promise<void> {
  const { door, http } = ctx;
  if (ctx.keeper) {
    ctx.held = ctx.keeper.keep(ctx.answer!);
    ctx.keeper = null;
  }
  ctx.outgoing = ctx.held ? await heldOutgoing(door, http!, ctx.held) : answerOutgoing(door, http!, ctx.answer!);
}

function answerOutgoing(door: AnyDoor, request: Request, answer: DoorAnswer): Outgoing {
  const headers = contentHeaders(door, answer.headers);
  if (door.produces === "binary") {
    // A binary body brings its own tag (over its base64); the tag never sees the bytes.
    const base64 = String(answer.body);
    return finish(door, request, answer.status, headers, Buffer.from(base64, "base64"), () => contentTag(base64));
  }
  const text = door.produces === "text" ? String(answer.body) : JSON.stringify(answer.body);
  return finish(door, request, answer.status, headers, text, () => contentTag(text));
}

/** An answer from memory: 304 before it is even rendered. */
async function heldOutgoing(door: AnyDoor, request: Request, document: ConstantDocument): Promise<Outgoing> {
  const headers = contentHeaders(door, document.headers);
  const { lastModified } = document;
  if (document.status === 200 && lastModified) headers.set("Last-Modified", lastModified);
  const unchanged =
    matchesIfNoneMatch(request.headers.get("if-none-match"), document.tag) || (lastModified !== undefined && notModifiedSince(request, lastModified));
  if (document.status === 200 && unchanged) {
    headers.set("ETag", document.tag);
    return { status: 304, headers, body: "", notModified: true };
  }
  return finish(door, request, document.status, headers, await document.textAt(new Date()), () => document.tag);
}

/** Only a reading's 200 may be kept, and only it is tagged (`tag` is worked out then); anything else is answered afresh every time. */
function finish(door: AnyDoor, request: Request, status: number, headers: Headers, body: Outgoing["body"], tag: () => string): Outgoing {
  if ((status !== 200 || door.method !== "GET") && !(headers.get("Cache-Control") ?? "").includes("no-store")) headers.set("Cache-Control", CACHE_HEADERS.live);
  if (door.method === "GET" && status === 200) {
    const etag = tag();
    headers.set("ETag", etag);
    if (matchesIfNoneMatch(request.headers.get("if-none-match"), etag)) return { status: 304, headers, body: "", notModified: true };
  }
  return { status, headers, body, notModified: false };
}

function contentHeaders(door: AnyDoor, own: Record<string, string>): Headers {
  const headers = new Headers({ "Cache-Control": cacheControlOf(door), ...own });
  // A caller's answer is never kept by a shared cache, whatever the door says of itself.
  if (door.auth !== "none") headers.set("Cache-Control", CACHE_HEADERS.private);
  if (door.auth !== "none") headers.set("Vary", "Authorization");
  if (door.produces === "text") headers.set("Content-Type", "text/plain; charset=utf-8");
  else if (door.produces === "binary") headers.set("Content-Type", "application/octet-stream");
  // A door may name a more specific JSON type (application/a2a+json, application/jwk-set+json).
  else if (!headers.has("Content-Type")) headers.set("Content-Type", "application/json; charset=utf-8");
  return headers;
}

function cacheControlOf(door: AnyDoor): string {
  if (door.auth !== "none") return CACHE_HEADERS.private;
  const policy = door.cache ?? "live";
  return policy === "shared" ? sharedCacheControl() : CACHE_HEADERS[policy];
}

/**
 * A public reading a shared cache may serve for a few seconds: browsers and agents revalidate by
 * ETag every time (max-age=0), a CDN or proxy keeps it s-maxage seconds and may then serve it stale
 * for stale-while-revalidate seconds while it asks again. Both 0: not kept at all.
 */
function sharedCacheControl(): string {
  const { CITY_SHARED_CACHE_SECONDS: fresh, CITY_SHARED_CACHE_STALE_SECONDS: stale } = env();
  if (fresh === 0 && stale === 0) return CACHE_HEADERS.live;
  return `public, max-age=0, s-maxage=${fresh}, stale-while-revalidate=${stale}`;
}
