import { describe, expect, it } from "vitest";
import { classifyAddress } from "@/lib/city/origin/addresses";
import { originDomain } from "@/lib/city/origin/domain";

/*
 * CITY-ORIGIN/1's address guard, with fixed vectors: the city's origin check connects to public
 * unicast addresses only (never loopback, private, link-local, CGNAT, multicast or the city's own),
 * loopback only in the insecure mode of local development and tests.
 */

const PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"];

const FORBIDDEN: [string, RegExp][] = [
  ["127.0.0.1", /loopback/],
  ["127.255.0.9", /loopback/],
  ["::1", /loopback/],
  ["10.0.0.1", /private/],
  ["172.16.5.4", /private/],
  ["172.31.255.255", /private/],
  ["192.168.1.1", /private/],
  ["fd00::2", /unique local/],
  ["fc00::1", /unique local/],
  ["169.254.169.254", /link-local/],
  ["fe80::1", /link-local/],
  ["100.64.0.1", /CGNAT/],
  ["100.127.255.254", /CGNAT/],
  ["224.0.0.1", /multicast/],
  ["239.255.255.250", /multicast/],
  ["ff02::1", /multicast/],
  ["255.255.255.255", /broadcast/],
  ["0.0.0.0", /unspecified/],
  ["0.1.2.3", /unspecified/],
  ["::", /unspecified/],
  ["::ffff:10.0.0.1", /carrying an IPv4/],
  ["::ffff:8.8.8.8", /carrying an IPv4/],
  ["64:ff9b::a00:1", /carrying an IPv4/],
  ["2002:a00:1::", /carrying an IPv4/],
  ["2001::1", /carrying an IPv4/],
  ["192.0.2.2", /special-purpose/],
  ["198.51.100.7", /special-purpose/],
  ["203.0.113.7", /special-purpose/],
  ["198.18.0.1", /special-purpose/],
  ["240.0.0.1", /special-purpose/],
  ["2001:db8::1", /special-purpose/],
  ["3fff::1", /special-purpose/],
  ["100::1", /special-purpose/],
];

describe("the origin check's address classifier", () => {
  it.each(PUBLIC)("allows the public unicast address %s", (address) => {
    expect(classifyAddress(address)).toMatchObject({ allowed: true });
    expect(classifyAddress(address, { allowLoopback: true })).toMatchObject({ allowed: true });
  });

  it.each(FORBIDDEN)("refuses %s, saying why", (address, why) => {
    const verdict = classifyAddress(address);
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed ? "" : verdict.reason).toMatch(why);
  });

  it("allows loopback in insecure mode only, and nothing else more", () => {
    expect(classifyAddress("127.0.0.1", { allowLoopback: true })).toMatchObject({ allowed: true, family: 4 });
    expect(classifyAddress("::1", { allowLoopback: true })).toMatchObject({ allowed: true, family: 6 });
    for (const [address] of FORBIDDEN.filter(([a]) => !["127.0.0.1", "127.255.0.9", "::1"].includes(a))) {
      expect(classifyAddress(address, { allowLoopback: true }).allowed, address).toBe(false);
    }
  });

  it("refuses the city's own address, whatever its range, in every spelling", () => {
    expect(classifyAddress("8.8.8.8", { ownAddresses: ["8.8.8.8"] })).toMatchObject({ allowed: false, reason: "the city's own address" });
    expect(classifyAddress("2606:4700:4700:0:0:0:0:1111", { ownAddresses: ["2606:4700:4700::1111"] })).toMatchObject({ allowed: false });
    expect(classifyAddress("127.0.0.1", { allowLoopback: true, ownAddresses: ["127.0.0.1"] })).toMatchObject({ allowed: false });
    expect(classifyAddress("8.8.4.4", { ownAddresses: ["8.8.8.8", "city.example"] })).toMatchObject({ allowed: true });
  });

  it("refuses what is not an address", () => {
    expect(classifyAddress("example.com").allowed).toBe(false);
    expect(classifyAddress("").allowed).toBe(false);
  });
});

describe("the domain an origin names", () => {
  it.each([
    ["example.com", "example.com"],
    ["Example.COM", "example.com"],
    ["https://agents.example.com/bot?x=1", "agents.example.com"],
    ["http://example.com", "example.com"],
    ["bücher.example", "xn--bcher-kva.example"],
    ["example.com.", "example.com"],
  ])("%s names %s, checked over HTTPS on 443", (origin, domain) => {
    expect(originDomain(origin)).toEqual({ ok: true, value: { domain, host: domain, port: 443, scheme: "https" } });
  });

  it.each([
    "my agent",
    "8.8.8.8",
    "https://[2606:4700::1111]/",
    "localhost",
    "example.com:8443",
    "ftp://example.com",
    "https://user:pw@example.com",
    "-bad-.com",
    "",
  ])("%s cannot be proven, and says so", (origin) => {
    const outcome = originDomain(origin);
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? "" : outcome.problem).toMatch(/cannot be proven/);
  });

  it("allows http://, a port and a single label in insecure mode only", () => {
    expect(originDomain("http://proof.test:4567", { insecure: true })).toEqual({
      ok: true,
      value: { domain: "proof.test:4567", host: "proof.test", port: 4567, scheme: "http" },
    });
    expect(originDomain("localhost:3000", { insecure: true })).toMatchObject({ ok: true, value: { domain: "localhost:3000", scheme: "https" } });
    expect(originDomain("http://proof.test:4567").ok).toBe(false);
    expect(originDomain("http://proof.test")).toMatchObject({ ok: true, value: { scheme: "https", port: 443 } });
  });
});
