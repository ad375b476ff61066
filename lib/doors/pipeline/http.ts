import { countingQueries } from "@/db/query-count";
import { env } from "@/lib/env";
import { CityError, toProblem } from "@/lib/errors";
import { type ConstantDocument, constantDocument, isConstantDocument } from "./constant-documents";
import { type AnyDoor, DEFAULT_MAX_BODY_BYTES } from "@/lib/doors/door";
import { logAnswer, newRequestId } from "@/lib/logger";
import { type CorsGrant, corsHeaders, doorGrant, preflightAnswer, preflightMethod } from "./cors";
import { contentTag, matchesIfNoneMatch, notModified, notModifiedSince } from "./etag";
import { bodyTooLarge, type DoorAnswer, doorRequestOf, invokeDoor, logUnexpected } from "./invoke";
import { isVersionedRead, versionedAnswer } from "./read-cache";
import { checkSignedBody, signAnswer } from "./signature";
import { getDb } from "@/lib/city/database";

type RouteContext = { params: Promise<Record<string, string | string[] | undefined>> };
type RouteHandler = ((request: Request, context: RouteContext) => Promise<Response>) & { door?: AnyDoor };

const HANDLED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
type RouteMethod = (typeof HANDLED_METHODS)[number] | "OPTIONS";

const CACHE_HEADERS = {
  static: "public, max-age=60, stale-while-revalidate=600",
  live: "no-store",
  private: "private, no-store",
} as const;

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

function cacheControlOf(door: AnyDoor): string {
  if (door.auth !== "none") return CACHE_HEADERS.private;
  const policy = door.cache ?? "live";
  return policy === "shared" ? sharedCacheControl() : CACHE_HEADERS[policy];
}

/**
 * The route handlers of one path, wired from its doors: `export const { GET, POST, ..., OPTIONS } =
 * routes(listBags, keepBag)`. Methods the path does not serve answer a 405 problem document;
 * OPTIONS answers CORS preflights here, since doors do not pass through the proxy.
 */
export function routes(...doors: AnyDoor[]): Record<RouteMethod, RouteHandler> {
  const methods = doors.map((d) => d.method);
  const pathName = { name: doors[0]?.name ?? "unserved", path: doors[0]?.path ?? "" };
  const entries = HANDLED_METHODS.map((method) => {
    const door = doors.find((d) => d.method === method);
    const handler: RouteHandler = door
      ? Object.assign(async (request: Request, context: RouteContext) => serveDoor(door, request, await context.params), { door })
      : async (request) => answered(pathName, request, null, async () => notServed(request, pathName.path, methods));
    return [method, handler] as const;
  });
  const preflight: RouteHandler = async (request) => {
    const asked = doors.find((d) => d.method === preflightMethod(request));
    const grant = asked && isPublic(asked) ? doorGrant(asked.method) : null;
    return answered({ ...pathName, name: asked?.name ?? pathName.name }, request, grant, async () => preflightAnswer(grant, methods));
  };
  return Object.fromEntries([...entries, ["OPTIONS", preflight]]) as Record<RouteMethod, RouteHandler>;
}

/** A 405 problem naming the methods a path does serve. */
export function notServed(request: Request, doorPath: string, methods: readonly string[], why = ""): Response {
  const allow = methods.join(", ");
  return problemResponse(
    new CityError("method_not_allowed", `${request.method} is not served here; this path answers ${allow}${why}.`),
    doorPath,
    new URL(request.url).pathname,
    { Allow: allow },
  );
}

export async function serveDoor(door: AnyDoor, request: Request, params: Record<string, string | string[] | undefined> = {}): Promise<Response> {
  return answered(door, request, isPublic(door) ? doorGrant(door.method) : null, async () => {
    const url = new URL(request.url);
    const counted = await countingQueries(async () => {
      if (isConstantDocument(door, request)) return serveFromMemory(door, request, await constantDocument(door, request));
      const raw = { ...(await readInput(door, request, url)), ...flatParams(params) };
      if (isVersionedRead(door, request)) return serveFromMemory(door, request, await versionedAnswer(door, request, raw));
      return answerResponse(door, await invokeDoor(door, raw, doorRequestOf(request, request.method)), request);
    });
    if (env().CITY_COUNT_QUERIES === "1") counted.value.headers.set("X-City-Queries", String(counted.queries));
    return counted.value;
  });
}

/** Public doors (no credential, or an optional one) may be read from any origin; others carry no grant. */
function isPublic(door: Pick<AnyDoor, "auth">): boolean {
  return door.auth === "none" || door.auth === "optional";
}

/**
 * One answer of the city's own handlers (doors, MCP, A2A, unknown paths): a fresh request id,
 * nosniff and the CORS grant on whatever `answer` returns (a thrown error becomes a problem), and
 * one JSON access line: names, codes and numbers, never a body or a credential.
 */
export async function answered(
  where: { name: string; path: string },
  request: Request,
  grant: CorsGrant | null,
  answer: () => Promise<Response>,
): Promise<Response> {
  const started = performance.now();
  const requestId = newRequestId();
  let response: Response;
  try {
    response = await answer();
  } catch (err) {
    logUnexpected(`door ${where.name}`, err);
    response = problemResponse(err, where.path, new URL(request.url).pathname);
  }
  response = withHeaders(response, answerHeaders(requestId, grant));
  logAnswer({ request_id: requestId, door: where.name, method: request.method, status: response.status, duration_ms: Math.round(performance.now() - started) });
  return response;
}

/** Headers on every answer of `answered`: nosniff, the request id and the CORS grant, if any. */
export function answerHeaders(requestId: string, grant: CorsGrant | null): Record<string, string> {
  return { "X-Content-Type-Options": "nosniff", "X-Request-Id": requestId, ...corsHeaders(grant) };
}

/** Sets headers on a response; one whose headers are immutable (a fetched one) is copied first. */
function withHeaders(response: Response, headers: Record<string, string>): Response {
  try {
    for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, { status: response.status, statusText: response.statusText, headers: response.headers });
    for (const [name, value] of Object.entries(headers)) copy.headers.set(name, value);
    return copy;
  }
}

async function readInput(door: AnyDoor, request: Request, url: URL): Promise<Record<string, unknown>> {
  if (door.method === "GET" || door.method === "DELETE") {
    const query: Record<string, string | string[]> = {};
    for (const key of new Set(url.searchParams.keys())) {
      const values = url.searchParams.getAll(key);
      query[key] = values.length === 1 ? values[0]! : values;
    }
    // The city reads no body here: a signature covers no digest (lib/doors/pipeline/signature.ts).
    checkSignedBody(request, new Uint8Array());
    return query;
  }
  const bytes = await readBodyBytes(request, door.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  // A signed request's Content-Digest is checked over the exact bytes before anything parses them.
  checkSignedBody(request, bytes);
  const text = decodeBody(bytes);
  if (text.trim() === "") return {};
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(type)) {
    throw new CityError("unsupported_media_type", "Send the body as JSON with Content-Type: application/json.");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CityError("malformed_json", "The body could not be parsed as JSON.");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new CityError("bad_request", "The body must be a JSON object.");
  }
  return parsed as Record<string, unknown>;
}

/** Reads at most `limit` bytes: a declared or actual larger body is refused before parsing. */
export async function readBody(request: Request, limit: number): Promise<string> {
  return decodeBody(await readBodyBytes(request, limit));
}

function decodeBody(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes);
}

/** The exact bytes of a body, at most `limit` of them (see readBody). */
export async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  const tooLarge = () => bodyTooLarge(limit);
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function flatParams(params: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params)) {
    if (typeof value === "string") out[key] = value;
  }
  return out;
}

async function answerResponse(door: AnyDoor, answer: DoorAnswer, request: Request): Promise<Response> {
  if (door.signsAnswer && answer.status === 200) {
    const text = JSON.stringify(answer.body);
    const signature = await signAnswer(await getDb(), text, request, door.signsAnswer.tag);
    return sendAnswer(door, request, answer.status, contentHeaders(door, { ...answer.headers, ...signature }), text, contentTag);
  }
  if (door.produces === "binary") {
    const base64 = String(answer.body);
    return sendAnswer(door, request, answer.status, contentHeaders(door, answer.headers), Buffer.from(base64, "base64"), () => contentTag(base64));
  }
  const text = door.produces === "text" ? String(answer.body) : JSON.stringify(answer.body);
  return sendAnswer(door, request, answer.status, contentHeaders(door, answer.headers), text, contentTag);
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

/**
 * A reading door's 200 carries an ETag over its content without `now_utc`; a matching
 * If-None-Match answers 304 with no body. Writes are never tagged.
 */
function sendAnswer(
  door: AnyDoor,
  request: Request,
  status: number,
  headers: Headers,
  text: string | Uint8Array<ArrayBuffer>,
  tag: (text: string) => string,
): Response {
  // Only a reading's 200 may be kept; anything else is answered afresh every time.
  if ((status !== 200 || door.method !== "GET") && !(headers.get("Cache-Control") ?? "").includes("no-store")) headers.set("Cache-Control", CACHE_HEADERS.live);
  // A binary body brings its own tag function (over its base64); `tag` never sees the bytes.
  if (door.method === "GET" && status === 200) {
    const etag = tag(typeof text === "string" ? text : "");
    headers.set("ETag", etag);
    if (matchesIfNoneMatch(request.headers.get("if-none-match"), etag)) return notModified(headers);
  }
  return new Response(text, { status, headers });
}

/**
 * An answer from memory: a constant document (lib/doors/pipeline/constant-documents.ts) or a versioned read
 * (lib/doors/pipeline/read-cache.ts); 304 before it is even rendered.
 */
async function serveFromMemory(door: AnyDoor, request: Request, document: ConstantDocument): Promise<Response> {
  const headers = contentHeaders(door, document.headers);
  const { lastModified } = document;
  if (document.status === 200 && lastModified) headers.set("Last-Modified", lastModified);
  const unchanged =
    matchesIfNoneMatch(request.headers.get("if-none-match"), document.tag) || (lastModified !== undefined && notModifiedSince(request, lastModified));
  if (document.status === 200 && unchanged) {
    headers.set("ETag", document.tag);
    return notModified(headers);
  }
  return sendAnswer(door, request, document.status, headers, await document.textAt(new Date()), () => document.tag);
}

export function problemResponse(err: unknown, door: string, instance: string, extra: Record<string, string> = {}): Response {
  const problem = toProblem(err, door, instance);
  const headers = new Headers({
    ...(err instanceof CityError ? err.options.headers : {}),
    "Content-Type": "application/problem+json; charset=utf-8",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    ...extra,
  });
  if (problem.retry_after_seconds !== undefined) headers.set("Retry-After", String(problem.retry_after_seconds));
  if (problem.limit && problem.status === 429) {
    const { name, limit, window_seconds, remaining } = problem.limit;
    headers.set("RateLimit-Policy", `"${name}";q=${limit}${window_seconds ? `;w=${window_seconds}` : ""}`);
    headers.set("RateLimit", `"${name}";r=${remaining ?? 0}${problem.retry_after_seconds !== undefined ? `;t=${problem.retry_after_seconds}` : ""}`);
  }
  return new Response(JSON.stringify(problem), { status: problem.status, headers });
}
