import ipaddr from "ipaddr.js";

/*
 * A presentation's source, for the gate's per-source shares (issue 43): the network a client
 * address belongs to, at the size one holder of addresses usually gets. An IPv4 address counts by
 * its /24 (rotating the last octet is one source). An IPv6 address counts by its /64 (one host's
 * usual allocation) inside its /48 (one site's): rotating /64s inside a /48 is one source, and one
 * /64 takes only a smaller share of its /48's. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the
 * IPv4 address it carries.
 */

export interface Source {
  /** The source's prefix: "a.b.c.0/24" or an IPv6 "/48", in RFC 5952 text. */
  prefix: string;
  /** IPv6 only: the /64 inside the /48 (RFC 5952 text); null for IPv4. */
  host: string | null;
}

/**
 * The source of a client address as lib/doors/pipeline/client-address.ts gives it (an IPv4 address, or an
 * IPv6 /64 written "x:x:x:x::/64"), or of any IP address text; null for anything else.
 */
export function sourceOf(address: string | null | undefined): Source | null {
  const text = address?.trim().replace(/\/\d+$/, "") ?? "";
  // Only the four-part decimal IPv4 form: "1.2.3" or "0x7f.1" are not how an address is written.
  if (!ipaddr.IPv4.isValidFourPartDecimal(text) && !ipaddr.IPv6.isValid(text)) return null;
  const ip = ipaddr.process(text);
  if (ip.kind() === "ipv4") {
    const [a, b, c] = (ip as ipaddr.IPv4).octets;
    return { prefix: `${a}.${b}.${c}.0/24`, host: null };
  }
  const parts = (ip as ipaddr.IPv6).parts;
  const keep = (n: number) => new ipaddr.IPv6(parts.map((p, i) => (i < n ? p : 0))).toString();
  return { prefix: `${keep(3)}/48`, host: `${keep(4)}/64` };
}

/**
 * A source's share of a bound: `percent` of `limit`, rounded down, at least 1 (a share of 0 would
 * refuse every source). So `ceil(100 / percent)` sources at least are needed to take the whole bound.
 */
export function shareOf(limit: number, percent: number): number {
  return Math.max(1, Math.floor((limit * percent) / 100));
}

/** How many sources, each at its share, it takes to use `reach` of a bound (the botnet's price). */
export function sourcesToFill(reach: number, share: number): number {
  return Math.ceil(reach / share);
}
