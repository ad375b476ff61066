import { isIP } from "node:net";
import { env } from "@/lib/env";
import { logLine } from "@/lib/logger";

/** How the client address is read: Vercel's edge header, N appending proxies, or not at all. */
export type AddressMode = "vercel" | number;

/**
 * The client address as the trusted proxies saw it (env CITY_TRUSTED_PROXIES), or null when it
 * cannot be known; a null address is never a bucket: per-address limits then stand aside and the
 * city-wide ceilings hold alone (one shared "unknown" bucket would let a few calls lock everyone out).
 *
 * `vercel`: Vercel's edge sets x-vercel-forwarded-for itself, overwriting what a client sent.
 * A number N >= 1: each of N proxies appends the address it saw to X-Forwarded-For, so the N-th
 * entry from the right is the client as the outermost trusted proxy saw it; entries left of it are
 * the client's own claim. Fewer than N entries: a proxy did not append, so nothing is trusted.
 * 0 (the default off Vercel): unknown. `next start` alone keeps a client's own X-Forwarded-For as
 * sent and fills one in only when none is sent, and gives route handlers no socket address.
 */
export function clientAddress(headers: Headers, mode: AddressMode = addressMode()): string | null {
  if (mode === "vercel") return normalAddress(headers.get("x-vercel-forwarded-for")?.split(",")[0] ?? headers.get("x-real-ip"));
  if (mode === 0) return null;
  const hops = (headers.get("x-forwarded-for") ?? "").split(",").map((h) => h.trim());
  if (hops.length < mode || hops.slice(-mode).some((h) => h === "")) return null;
  return normalAddress(hops[hops.length - mode]);
}

/**
 * An address as one bucket: IPv4 without a port, an IPv4-mapped IPv6 address as IPv4, any other
 * IPv6 address as its /64 (one host's usual allocation, so rotating within it is one bucket).
 * Anything that is not an IP address is unknown.
 */
export function normalAddress(raw: string | null | undefined): string | null {
  let text = raw?.trim() ?? "";
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(text)) text = text.slice(0, text.lastIndexOf(":"));
  text = text.replace(/%.*$/, "");
  const mapped = /^::ffff:([\d.]+)$/i.exec(text);
  if (mapped && isIP(mapped[1]!) === 4) return mapped[1]!;
  const family = isIP(text);
  if (family === 4) return text;
  if (family !== 6) return null;
  return `${expandIpv6(text).slice(0, 4).join(":")}::/64`;
}

function expandIpv6(text: string): string[] {
  const [head, tail] = text.toLowerCase().split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  // An embedded IPv4 tail (a.b.c.d) is two groups; only the first four groups are kept anyway.
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return groups.map((g) => (g.includes(".") ? g : (parseInt(g, 16) || 0).toString(16)));
}

/** The configured mode; unset: `vercel` on Vercel (env VERCEL=1), else 0 (unknown). */
export function addressMode(): AddressMode {
  const { CITY_TRUSTED_PROXIES, VERCEL } = env();
  return CITY_TRUSTED_PROXIES ?? (VERCEL === "1" ? "vercel" : 0);
}

/** Said once at start: a city that cannot know client addresses runs on its city-wide ceilings alone. */
export function announceAddressMode(mode: AddressMode = addressMode()): void {
  if (mode !== 0) {
    logLine("info", "client addresses", { mode: String(mode) });
    return;
  }
  // A warning, not an error: on a laptop it is expected and harmless; in production it is the one
  // setting to act on.
  logLine("warn", "CLIENT ADDRESSES UNKNOWN", {
    detail:
      "CITY_TRUSTED_PROXIES is 0 or unset off Vercel, so X-Forwarded-For is not trusted and per-address limits are off; only the city-wide ceilings and per-origin limits hold. On your own machine that is expected. Behind N reverse proxies that append to X-Forwarded-For, set CITY_TRUSTED_PROXIES=N.",
  });
}
