import { type NextRequest, NextResponse } from "next/server";

/** Headers a cross-origin page may send; credentials travel as a Bearer token only, never a cookie. */
const CORS_REQUEST_HEADERS = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID";

/**
 * Every request gets a fresh request id (whatever a client sent is replaced), passed on to the
 * route and echoed in X-Request-Id. CORS preflights are answered here for every path: a preflight
 * grants nothing by itself, since only public doors' answers carry Access-Control-Allow-Origin.
 */
export function proxy(request: NextRequest) {
  const requestId = crypto.randomUUID();
  if (request.method === "OPTIONS" && request.headers.has("access-control-request-method")) {
    return new NextResponse(null, {
      status: 204,
      headers: {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "GET, POST, PUT, PATCH, DELETE",
        "Access-Control-Allow-Headers": CORS_REQUEST_HEADERS,
        "Access-Control-Max-Age": "86400",
        "X-Request-Id": requestId,
      },
    });
  }
  const headers = new Headers(request.headers);
  headers.set("x-request-id", requestId);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set("X-Request-Id", requestId);
  return response;
}

export const config = { matcher: ["/((?!_next/static|_next/image|favicon.ico).*)"] };
