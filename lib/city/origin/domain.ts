import { domainToASCII } from "node:url";
import ipaddr from "ipaddr.js";

/*
 * The domain a citizen's origin names (CITY-ORIGIN/1): the host of its origin text when that text
 * is a DNS name, or a URL (its host), lowercased, IDNA to ASCII. Anything else (free text, an IP
 * address, a single label) cannot be proven, and the answer says why.
 */

export interface OriginDomain {
  /** The proven name as published: the ASCII host, with `:port` only in insecure mode. */
  domain: string;
  /** The host alone (what DNS is asked about). */
  host: string;
  /** The port to connect to: 443, or the one named in insecure mode. */
  port: number;
  /** The scheme the HTTPS proof uses: https, or http in insecure mode when the origin text says http://. */
  scheme: "https" | "http";
}

export type DomainOutcome = { ok: true; value: OriginDomain } | { ok: false; problem: string };

/** The longest DNS name (RFC 1035: 253 characters in text form) and label (63). */
const NAME_MAX = 253;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** The domain of an origin text, or why it has none; `insecure` allows http:// and a host:port (local development). */
export function originDomain(origin: string, { insecure = false }: { insecure?: boolean } = {}): DomainOutcome {
  const text = origin.trim();
  const unprovable = (why: string): DomainOutcome => ({
    ok: false,
    problem: `The origin "${text.slice(0, 100)}" ${why}, so it cannot be proven: only an origin that is a DNS name (example.com) or a URL (https://example.com/...) names a domain to prove.`,
  });
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`);
  } catch {
    return unprovable("is not a DNS name or a URL");
  }
  const scheme = url.protocol === "https:" ? "https" : url.protocol === "http:" ? "http" : null;
  if (!scheme) return unprovable(`names the scheme ${url.protocol.slice(0, -1)}, not https`);
  // A bare name must be only a name (a URL may carry a path: its host is the domain).
  const bare = !/^[a-z][a-z0-9+.-]*:\/\//i.test(text);
  if (bare && !/^[^/?#@\s]+$/.test(text)) return unprovable("is not a DNS name or a URL");
  if (url.username || url.password) return unprovable("carries credentials");
  const host = domainToASCII(url.hostname.replace(/\.$/, "")).toLowerCase();
  if (!host) return unprovable("is not a valid international domain name");
  if (host.startsWith("[") || ipaddr.isValid(host)) return unprovable("is an IP address, not a DNS name");
  const labels = host.split(".");
  if (host.length > NAME_MAX || !labels.every((l) => LABEL.test(l))) return unprovable("is not a valid DNS name");
  if (labels.length < 2 && !insecure) return unprovable("is a single label, not a domain of the public DNS");
  if (url.port && !insecure) return unprovable("names a port: a proof is checked on port 443 only");
  const port = url.port ? Number(url.port) : scheme === "http" && insecure ? 80 : 443;
  return {
    ok: true,
    value: {
      domain: url.port ? `${host}:${url.port}` : host,
      host,
      port,
      // HTTPS only; http:// only for local development, where the origin text asks for it.
      scheme: insecure && scheme === "http" ? "http" : "https",
    },
  };
}
