import { describe, expect, it } from "vitest";
import { admissionWindow } from "@/lib/city/gate/gate-flood";
import { hostShare, prefixShare } from "@/lib/city/gate";
import { anonymousReach, shareOf, sourceOf, sourcesToFill } from "@/lib/city/challenge";
import type { GateCircumstances, GateLimits } from "@/lib/city/challenge";
import { overflowWindow } from "@/lib/city/bounds/gate-windows";
import { OVERFLOW_BUCKETS, OVERFLOW_FACTOR, cityWindow, withReach } from "@/lib/city/bounds";
import { stripeLimit } from "@/lib/city/bounds/rate-stripes";
import { normalAddress } from "@/lib/doors/pipeline/client-address";

/* A presentation's source (issue 43): fixed vectors for the prefix arithmetic and the shares. */

describe("a client address's source: an IPv4 /24, an IPv6 /64 inside its /48", () => {
  it.each([
    ["203.0.113.77", "203.0.113.0/24", null],
    ["203.0.113.0", "203.0.113.0/24", null],
    ["203.0.113.255", "203.0.113.0/24", null],
    ["10.1.2.3", "10.1.2.0/24", null],
    ["0.0.0.0", "0.0.0.0/24", null],
    // IPv4-mapped IPv6 is the IPv4 address it carries, written either way.
    ["::ffff:203.0.113.9", "203.0.113.0/24", null],
    ["::FFFF:c000:0280", "192.0.2.0/24", null],
    ["2001:db8:abcd:12:1::7", "2001:db8:abcd::/48", "2001:db8:abcd:12::/64"],
    ["2001:0DB8:ABCD:0012:ffff:ffff:ffff:ffff", "2001:db8:abcd::/48", "2001:db8:abcd:12::/64"],
    ["2001:db8::1", "2001:db8::/48", "2001:db8::/64"],
    ["2001:db8:0:ffff::", "2001:db8::/48", "2001:db8:0:ffff::/64"],
    ["fe80::1", "fe80::/48", "fe80::/64"],
    // What client-address.ts hands the city for IPv6: the /64 as text.
    ["2001:db8:1:2::/64", "2001:db8:1::/48", "2001:db8:1:2::/64"],
  ])("%s is %s (%s)", (address, prefix, host) => {
    expect(sourceOf(address)).toEqual({ prefix, host });
  });

  it("is the same source for every address a client address normalises to", () => {
    for (const raw of ["2001:db8:1:2:aaaa::1", "[2001:db8:1:2::9]:443", "2001:db8:1:2:ffff:1:2:3"])
      expect(sourceOf(normalAddress(raw))).toEqual({ prefix: "2001:db8:1::/48", host: "2001:db8:1:2::/64" });
    expect(sourceOf(normalAddress("203.0.113.9:8080"))).toEqual({ prefix: "203.0.113.0/24", host: null });
  });

  it("rotating the last octet, or the /64s of one /48, stays one source", () => {
    const v4 = new Set(Array.from({ length: 256 }, (_, i) => sourceOf(`198.51.100.${i}`)!.prefix));
    expect([...v4]).toEqual(["198.51.100.0/24"]);
    const v6 = Array.from({ length: 300 }, (_, i) => sourceOf(`2001:db8:7:${i.toString(16)}::1`)!);
    expect(new Set(v6.map((s) => s.prefix))).toEqual(new Set(["2001:db8:7::/48"]));
    expect(new Set(v6.map((s) => s.host)).size).toBe(300);
    // Neighbours across the boundary are other sources.
    expect(sourceOf("198.51.101.0")!.prefix).toBe("198.51.101.0/24");
    expect(sourceOf("2001:db8:8::1")!.prefix).toBe("2001:db8:8::/48");
  });

  it.each([null, undefined, "", "unknown", "1.2.3", "256.1.1.1", "0x7f.0.0.1", "2001:db8::g", "::ffff:1.2.3"])("%s is no source", (address) => {
    expect(sourceOf(address)).toBeNull();
  });
});

describe("the shares of the admissions ceiling", () => {
  const c = (limits: Partial<GateLimits>, extra: Partial<GateCircumstances> = {}): GateCircumstances => ({
    now: new Date(0),
    ip: null,
    callerDid: null,
    credential: null,
    credentialRejected: false,
    limits: { perOriginPerHour: 20, perAddressPerHour: 30, admissionsPerHour: 600, ...limits },
    ...extra,
  });

  it("gives a /24 or /48 5% and a /64 1% by default, rounded down, never 0", () => {
    expect(shareOf(600, 5)).toBe(30);
    expect(shareOf(600, 1)).toBe(6);
    expect(shareOf(599, 5)).toBe(29);
    expect(shareOf(10, 5)).toBe(1);
    expect(prefixShare(c({}))).toBe(30);
    expect(hostShare(c({}))).toBe(6);
    expect(prefixShare(c({ admissionsPerHour: 40, prefixSharePercent: 10 }))).toBe(4);
    // A /64's share is never above its /48's.
    expect(hostShare(c({ admissionsPerHour: 40, prefixSharePercent: 10, hostSharePercent: 50 }))).toBe(4);
  });

  it("says what filling the keyless reach costs: 16 /24s at the defaults", () => {
    expect(sourcesToFill(480, 30)).toBe(16);
    expect(sourcesToFill(481, 30)).toBe(17);
  });

  it("keeps a fifth of the ceiling for settled citizens' signatures; every other presentation reaches the rest, stepped when it bids; without a bid only the open share", () => {
    expect(anonymousReach(c({}).limits)).toBe(480);
    expect(anonymousReach(c({ reservePercent: 50 }).limits)).toBe(300);
    const settled = { did: "did:web:city.example:c:settled", settled: true };
    const newcomer = { did: "did:web:city.example:c:newcomer", settled: false };
    // A bid (docs/pow.md) reaches what the reserve leaves, in steps; a settled sponsor's the whole ceiling, unstepped.
    expect(admissionWindow(c({}, { bid: true }))).toMatchObject({ reach: 480, steps: { floor: 360 } });
    expect(admissionWindow(c({}, { bid: true, sponsor: newcomer }))).toMatchObject({ reach: 480, steps: { floor: 360 } });
    expect(admissionWindow(c({}, { bid: true, sponsor: settled }))!.reach).toBe(600);
    expect(admissionWindow(c({}, { bid: true, sponsor: settled }))!.steps).toBeUndefined();
    // Without a bid: three quarters of what the reserve leaves (the open share), whoever signed.
    expect(admissionWindow(c({}))!.reach).toBe(360);
    expect(admissionWindow(c({}, { sponsor: settled }))!.reach).toBe(360);
  });

  it("cuts a reach over the ceiling's stripes as the limit is: their sum is the reach, no stripe above its share of the limit", () => {
    for (const [limit, reach] of [
      [600, 480],
      [20, 16],
      [3, 2],
      [7, 5],
      [100, 0],
    ] as const) {
      const full = cityWindow("gate-admissions", limit, 3600);
      const part = withReach(full, reach);
      const shares = Array.from({ length: full.stripes! }, (_, s) => stripeLimit(part, s));
      expect(shares.reduce((a, b) => a + b, 0)).toBe(reach);
      shares.forEach((share, s) => expect(share).toBeLessThanOrEqual(stripeLimit(full, s)));
    }
    expect(withReach(cityWindow("gate-admissions", 10, 3600), 10 * 0.8).reach).toBe(8);
  });

  it("counts a subject past the full table in one of a fixed set of overflow buckets, with a bounded limit", () => {
    const buckets = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const over = overflowWindow({ scope: "gate-address", subject: `10.0.${i >> 8}.${i & 255}`, limit: 30, windowSeconds: 3600 });
      expect(over.limit).toBe(30 * OVERFLOW_FACTOR);
      expect(over.scope).toBe("gate-address");
      buckets.add(over.subject);
    }
    expect(buckets.size).toBe(OVERFLOW_BUCKETS);
    expect([...buckets].every((b) => /^overflow\/\d+$/.test(b))).toBe(true);
  });
});
