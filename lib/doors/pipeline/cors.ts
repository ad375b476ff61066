/**
 * The city's CORS policy. The city never sets a cookie and never sends Access-Control-Allow-Credentials,
 * so a page elsewhere can only send what its own code holds (a Bearer token): a grant lets any
 * origin read an answer, and exposes nothing a page did not already have.
 */
export interface CorsGrant {
  /** The methods a preflight may be granted for. */
  methods: readonly string[];
  /** The response headers a page may read. */
  expose: string;
}

/** What a cross-origin page may send: credentials travel in Authorization, never in a cookie. */
const REQUEST_HEADERS = [
  "Authorization",
  "Content-Type",
  "Accept",
  "If-None-Match",
  "Last-Event-ID",
  "Mcp-Session-Id",
  "Mcp-Protocol-Version",
  "Mcp-Method",
  "Mcp-Name",
  "A2A-Version",
  "A2A-Extensions",
].join(", ");

const ANSWER_EXPOSED = "X-Request-Id, Retry-After, RateLimit, RateLimit-Policy";

/** Public doors (no credential, or an optional one): any origin reads them. */
export const doorGrant = (method: string): CorsGrant => ({ methods: [method], expose: `${ANSWER_EXPOSED}, ETag, Location` });

/** The MCP door: Bearer-auth only, so any origin may call it; its client reads the session and auth headers. */
export const MCP_GRANT: CorsGrant = { methods: ["POST"], expose: `${ANSWER_EXPOSED}, Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate` };

/** The A2A bridge (GET its description, POST its JSON-RPC): Bearer-auth only, like MCP. */
export const A2A_GRANT: CorsGrant = { methods: ["GET", "POST"], expose: ANSWER_EXPOSED };

/** Paths no door serves: a page may read the 404 problem that says so. */
export const UNKNOWN_GRANT: CorsGrant = { methods: ["GET", "POST", "PUT", "PATCH", "DELETE"], expose: ANSWER_EXPOSED };

/** The grant's headers on an answer. */
export function corsHeaders(grant: CorsGrant | null): Record<string, string> {
  return grant ? { "Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": grant.expose } : {};
}

/**
 * The answer to OPTIONS: 204 with Allow, and for a preflight the grant's methods and headers. With no
 * grant the answer carries no Access-Control-Allow-Origin, so the browser stops before the request.
 */
export function preflightAnswer(grant: CorsGrant | null, allow: readonly string[]): Response {
  const headers: Record<string, string> = { Allow: [...allow, "OPTIONS"].join(", "), "Cache-Control": "no-store" };
  if (grant) {
    headers["Access-Control-Allow-Methods"] = grant.methods.join(", ");
    headers["Access-Control-Allow-Headers"] = REQUEST_HEADERS;
    headers["Access-Control-Max-Age"] = "86400";
  }
  return new Response(null, { status: 204, headers });
}

/** The method a CORS preflight asks about, or null for a plain OPTIONS. */
export function preflightMethod(request: Request): string | null {
  return request.headers.get("access-control-request-method")?.trim().toUpperCase() || null;
}
