import { env } from "@/lib/env";

/** The loopback names a development city answers as (the SDK's localhostAllowedHostnames gives the same three). */
export const LOOPBACK_HOSTNAMES = ["localhost", "127.0.0.1", "[::1]"] as const;

/** Is CITY_BASE_URL a loopback address (a city run on this machine: npm run dev, npm start, the tests)? */
export function cityIsLoopback(): boolean {
  return (LOOPBACK_HOSTNAMES as readonly string[]).includes(new URL(env().CITY_BASE_URL).hostname);
}

/** The public hostnames the city answers as: CITY_BASE_URL's and the deployment's own Vercel hostnames, lowercase, without ports. */
export function cityHostnames(): string[] {
  const { CITY_BASE_URL, VERCEL_URL, VERCEL_BRANCH_URL, VERCEL_PROJECT_PRODUCTION_URL } = env();
  const vercel = [VERCEL_URL, VERCEL_BRANCH_URL, VERCEL_PROJECT_PRODUCTION_URL]
    .filter((h): h is string => Boolean(h))
    .map((h) => h.split(":")[0]!.toLowerCase());
  return [...new Set([new URL(CITY_BASE_URL).hostname, ...vercel])];
}

/**
 * The authorities (host, and port where it is not the scheme's default) a signed request may be
 * addressed to: CITY_BASE_URL's, the deployment's Vercel hosts (HTTPS), and the loopback names on
 * CITY_BASE_URL's port when the city is itself loopback.
 */
export function cityAuthorities(): string[] {
  const { CITY_BASE_URL, VERCEL_URL, VERCEL_BRANCH_URL, VERCEL_PROJECT_PRODUCTION_URL } = env();
  const base = new URL(CITY_BASE_URL);
  const vercel = [VERCEL_URL, VERCEL_BRANCH_URL, VERCEL_PROJECT_PRODUCTION_URL]
    .filter((h): h is string => Boolean(h))
    .map((h) => new URL(`https://${h.toLowerCase()}`).host);
  const port = base.port ? `:${base.port}` : "";
  const loopback = cityIsLoopback() ? LOOPBACK_HOSTNAMES.map((name) => `${name}${port}`) : [];
  return [...new Set([base.host, ...vercel, ...loopback])];
}
