import { type NextRequest, NextResponse } from "next/server";
import { newNonce, pagePolicy } from "@/lib/plat/csp";

/**
 * The plat's pages only (the matcher below keeps every door and static file out, so they never pay
 * for a proxy). Each page gets a fresh request id and a CSP nonce: Next reads the nonce from the
 * request's Content-Security-Policy header and puts it on the scripts and styles it writes.
 */
export function proxy(request: NextRequest) {
  const policy = pagePolicy(newNonce());
  const headers = new Headers(request.headers);
  headers.set("content-security-policy", policy);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set("Content-Security-Policy", policy);
  response.headers.set("X-Request-Id", crypto.randomUUID());
  return response;
}

/*
 * Everything but the doors and files: the plat's pages and the 404 page of any unknown address.
 * Excluded: /api/*, /_next/*, /.well-known/*, /schemas/*, the top-level doors, and every file name
 * with an extension (the JSON and text doors, public/ files). tests/doors/http/headers.test.ts checks
 * every registry door against it; a new top-level door without an extension is added here.
 */
export const config = {
  matcher: ["/((?!api(?:/|$)|_next/|\\.well-known/|schemas/|(?:mcp|gate|contact|residency)(?:/|$)|[^/]*\\.[^/]*$).*)"],
};
