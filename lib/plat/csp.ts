/**
 * Content Security Policies. Pages get a per-request nonce from the proxy (proxy.ts): Next puts it
 * on every script and style it writes into a page, and nothing else may run or style the page (no
 * 'unsafe-inline', no 'unsafe-eval'). Everything else (doors, files) is never meant to be rendered
 * as a page: nothing may load, run or frame there.
 */
export const NON_PAGE_POLICY = ["default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"].join("; ");

/**
 * `dev`: under `next dev` only, the framework's own development tools need what production never
 * allows: eval for fast refresh and inline styles for the error overlay (without them the overlay
 * is an unstyled grey box and the console fills with refusals). A production build never gets them.
 */
export function pagePolicy(nonce: string, dev: boolean = process.env.NODE_ENV === "development"): string {
  return [
    "default-src 'none'",
    // 'strict-dynamic' lets the nonced scripts load Next's own chunks; 'self' is only the fallback
    // of browsers older than CSP 3, which ignore 'strict-dynamic'.
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    // Next writes no inline style into the plat's pages (tests/e2e checks), so none is allowed.
    dev ? "style-src 'self' 'unsafe-inline'" : "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** 128 random bits, base64: unguessable, fresh for every page. */
export function newNonce(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
}
