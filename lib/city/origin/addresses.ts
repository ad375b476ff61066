import ipaddr from "ipaddr.js";

/*
 * Which addresses the city's origin check may connect to (CITY-ORIGIN/1): public unicast only.
 * The ranges come from ipaddr.js (its IANA special-purpose registries for IPv4 and IPv6, kept up
 * to date by its maintainers), so the city keeps no list of its own to fall behind: anything it
 * does not call plain global `unicast` is refused, by the name of its range. IPv6 forms that carry
 * an IPv4 address (mapped, NAT64, 6to4, Teredo) are refused too, whatever they carry: a public AAAA
 * record never needs one, and each is a way to reach an IPv4 network by another name.
 */

export type AddressVerdict = { allowed: true; address: string; family: 4 | 6 } | { allowed: false; address: string; reason: string };

/** The ranges a development city (CITY_ORIGIN_PROOF_INSECURE=1) may also reach: this machine only. */
const LOOPBACK = "loopback";

/**
 * Whether the city may connect to `address` to check an origin. `ownAddresses` are the city's own
 * (never, whatever their range); `allowLoopback` is the insecure mode of local development and
 * tests (127.0.0.0/8 and ::1; private, link-local and the rest stay refused there too).
 */
export function classifyAddress(address: string, options: { allowLoopback?: boolean; ownAddresses?: readonly string[] } = {}): AddressVerdict {
  if (!ipaddr.isValid(address)) return { allowed: false, address, reason: "not an IP address" };
  const parsed = ipaddr.parse(address);
  const normal = parsed.toNormalizedString();
  if ((options.ownAddresses ?? []).some((own) => ipaddr.isValid(own) && sameAddress(ipaddr.parse(own), parsed))) {
    return { allowed: false, address, reason: "the city's own address" };
  }
  const range = parsed.range();
  if (range === "unicast") return { allowed: true, address: normal, family: parsed.kind() === "ipv4" ? 4 : 6 };
  if (range === LOOPBACK && options.allowLoopback) return { allowed: true, address: normal, family: parsed.kind() === "ipv4" ? 4 : 6 };
  return { allowed: false, address, reason: `${describeRange(range)} (${range}), not public unicast` };
}

function sameAddress(a: ipaddr.IPv4 | ipaddr.IPv6, b: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return a.kind() === b.kind() && a.toNormalizedString() === b.toNormalizedString();
}

/** The range names a person reads in a refusal (ipaddr.js's names after the colon). */
function describeRange(range: string): string {
  switch (range) {
    case "private":
      return "a private address";
    case "uniqueLocal":
      return "a private (unique local) IPv6 address";
    case "loopback":
      return "a loopback address";
    case "linkLocal":
      return "a link-local address";
    case "carrierGradeNat":
      return "a carrier-grade NAT (CGNAT) address";
    case "multicast":
      return "a multicast address";
    case "broadcast":
      return "the broadcast address";
    case "unspecified":
      return "an unspecified address";
    case "ipv4Mapped":
    case "rfc6052":
    case "rfc6145":
    case "6to4":
    case "teredo":
      return "an IPv6 address carrying an IPv4 one";
    default:
      return "a special-purpose address";
  }
}
