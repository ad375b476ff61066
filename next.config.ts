import type { NextConfig } from "next";
import { NON_PAGE_POLICY } from "./lib/plat/csp";

const SECURITY_HEADERS = [
  { key: "Content-Security-Policy", value: NON_PAGE_POLICY },
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
  // Hardening on every answer. Pages pass the proxy, whose nonce CSP replaces this one (a proxy's
  // header wins over a configured one); doors and files keep this policy, under which nothing loads.
  headers: async () => [{ source: "/:path*", headers: SECURITY_HEADERS }],
  // POST /api/a2a/ is served as POST /api/a2a: A2A clients post to the address as written, and many
  // do not follow a 308 on a POST. Every other address ending in a slash keeps Next's default 308
  // to the address without it (the redirect below is that default, less the bridge).
  skipTrailingSlashRedirect: true,
  redirects: async () => [{ source: "/:path((?!api/a2a/+$)(?:[^/]+/)*[^/]+)/", destination: "/:path", permanent: true }],
  reactStrictMode: true,
  // `npm test` type-checks the project itself, with TypeScript 7 (package typescript-go: the same
  // checks, natively, in a third of the CPU), beside the build instead of inside it. Everywhere else
  // (a developer's build, Vercel's) the build type-checks as usual.
  typescript: { ignoreBuildErrors: process.env.CITY_TYPECHECK_APART === "1" },
  // A CI run builds a clean clone once and throws it away: Turbopack's build cache would be written
  // (over a minute on a busy 2-core machine) and never read. Elsewhere (Vercel sets CI=1) it is kept.
  experimental: { turbopackFileSystemCacheForBuild: process.env.CI !== "true" },
};

export default nextConfig;
