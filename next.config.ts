import type { NextConfig } from "next";

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'none'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = [
  { key: "Content-Security-Policy", value: CONTENT_SECURITY_POLICY },
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "Referrer-Policy", value: "no-referrer" },
  { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=(), payment=(), usb=()" },
  { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
  { key: "Strict-Transport-Security", value: "max-age=31536000; includeSubDomains" },
];

const nextConfig: NextConfig = {
  // PGlite ships WASM and data files that must be loaded from node_modules at run time, and ws
  // has optional native add-ons: neither survives bundling.
  serverExternalPackages: ["@electric-sql/pglite", "ws"],
  // The SQL migrations are read from disk at run time (PGlite migrates itself on first use).
  outputFileTracingIncludes: { "/**": ["./db/migrations/**/*"] },
  // A separate build folder lets two builds (for example two checkouts' test runs) coexist.
  distDir: process.env.CITY_NEXT_DIST_DIR || ".next",
  poweredByHeader: false,
  // Hardening on every answer. The plat's pages are server-rendered and need no script at all, so
  // none may run; styles and images come from the city itself.
  headers: async () => [{ source: "/:path*", headers: SECURITY_HEADERS }],
  reactStrictMode: true,
};

export default nextConfig;
