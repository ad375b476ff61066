import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // PGlite ships WASM and data files that must be loaded from node_modules at run time, and ws
  // has optional native add-ons: neither survives bundling.
  serverExternalPackages: ["@electric-sql/pglite", "ws"],
  // The SQL migrations are read from disk at run time (PGlite migrates itself on first use).
  outputFileTracingIncludes: { "/**": ["./db/migrations/**/*"] },
  // A separate build folder lets two builds (for example two checkouts' test runs) coexist.
  distDir: process.env.CITY_NEXT_DIST_DIR || ".next",
  poweredByHeader: false,
  reactStrictMode: true,
};

export default nextConfig;
