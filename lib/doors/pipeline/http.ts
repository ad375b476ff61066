import { countingQueries } from "@/db/query-count";
import { env } from "@/lib/env";
import { CityError, toProblem } from "@/lib/errors";
import type { AnyDoor } from "@/lib/doors/door";
import { logAnswer, newRequestId } from "@/lib/logger";
import { type RequestContext, requestContext } from "./context";
import { type CorsGrant, corsHeaders, doorGrant, preflightAnswer, preflightMethod } from "./cors";
import { doorRequestOf, logUnexpected } from "./invoke";
import { runWay } from "./way";

type RouteContext = { params: Promise<Record<string, string | string[] | undefined>> };
type RouteHandler = ((request: Request, context: RouteContext) => Promise<Response>) & { door?: AnyDoor };

const HANDLED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
type RouteMethod = (typeof HANDLED_METHODS)[number] | "OPTIONS";

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
    const counted = await countingQueries(async () => (await wayOf(door, request, params)).response!);
    if (env().CITY_COUNT_QUERIES === "1") counted.value.headers.set("X-City-Queries", String(counted.queries));
    return counted.value;
  });
}

/** An HTTP request's whole way (way.ts), every stage it took named in its context's trace. */
export async function wayOf(door: AnyDoor, request: Request, params: Record<string, string | string[] | undefined> = {}): Promise<RequestContext> {
  const ctx = requestContext(door, doorRequestOf(request, request.method), { http: request, params: flatParams(params) });
  await runWay(ctx);
  return ctx;
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

function flatParams(params: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params)) {
    if (typeof value === "string") out[key] = value;
  }
  return out;
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
