import { describe, expect, it } from "vitest";
import { anonymousReach, ceilingWindow, shareOf, sourceOf, sourcesToFill } from "@/lib/city/challenge";
import { citizenShare, citizenSubject, storeShares, visitorShare, visitorSubject } from "@/lib/city/bounds";
import { reserveOf, subjectHourShare } from "@/lib/city/bounds/store-shares";
import type { Env } from "@/lib/env";

/**
 * The share arithmetic of the gate (lib/city/challenge/gate-prefixes.ts, gate-pow.ts) and of the
 * store bounds (lib/city/bounds/store-shares.ts), against literals worked out by hand from the
 * rules the docs publish: a share is `percent` of a bound rounded down, never 0; a fifth of the
 * admissions ceiling is kept for presentations settled citizens sign; a reserve is a fifth of a bound rounded up;
 * a settled citizen's hour share grows a day at a time up to four days. No database.
 */

describe("a source's share of a gate bound", () => {
  it("is percent of the bound, rounded down, at least 1", () => {
    expect(shareOf(600, 5)).toBe(30);
    expect(shareOf(599, 5)).toBe(29); // 29.95
    expect(shareOf(7, 50)).toBe(3); // 3.5
    expect(shareOf(100, 100)).toBe(100);
    expect(shareOf(10, 5)).toBe(1); // 0.5, never 0
    expect(shareOf(0, 5)).toBe(1);
    expect(shareOf(40, 10)).toBe(4);
  });

  it("takes ceil(reach / share) sources to fill a reach", () => {
    expect(sourcesToFill(480, 30)).toBe(16);
    expect(sourcesToFill(481, 30)).toBe(17);
    expect(sourcesToFill(479, 30)).toBe(16);
    expect(sourcesToFill(0, 5)).toBe(0);
  });
});

describe("the admissions ceiling and what keyless presentations reach of it", () => {
  const limits = (admissionsPerHour: number, reservePercent?: number) => ({ perOriginPerHour: 20, perAddressPerHour: 30, admissionsPerHour, reservePercent });

  it("is a city-wide hour window of the configured size, over at most 32 stripes; off at 0", () => {
    expect(ceilingWindow(limits(600))).toEqual({ scope: "gate-admissions", subject: "city", limit: 600, windowSeconds: 3600, stripes: 32 });
    expect(ceilingWindow(limits(1))).toEqual({ scope: "gate-admissions", subject: "city", limit: 1, windowSeconds: 3600, stripes: 1 });
    expect(ceilingWindow(limits(0))).toBeNull();
  });

  it("leaves keyless presentations four fifths by default, rounded down; the reserve clamped to 0..100 %", () => {
    expect(anonymousReach(limits(600))).toBe(480);
    expect(anonymousReach(limits(599))).toBe(479); // 479.2
    expect(anonymousReach(limits(600, 50))).toBe(300);
    expect(anonymousReach(limits(600, 0))).toBe(600);
    expect(anonymousReach(limits(600, 100))).toBe(0);
    expect(anonymousReach(limits(600, 150))).toBe(0);
    expect(anonymousReach(limits(600, -20))).toBe(600);
    expect(anonymousReach(limits(10, 25))).toBe(7); // 7.5
    expect(anonymousReach(limits(0))).toBe(0);
  });
});

describe("a client address's source", () => {
  it("is an IPv4 address's /24, whatever its prefix length or spaces", () => {
    expect(sourceOf("192.0.2.77")).toEqual({ prefix: "192.0.2.0/24", host: null });
    expect(sourceOf(" 192.0.2.77/32 ")).toEqual({ prefix: "192.0.2.0/24", host: null });
    expect(sourceOf("::ffff:198.51.100.9")).toEqual({ prefix: "198.51.100.0/24", host: null });
  });

  it("is an IPv6 address's /48, and its /64 as the host, in RFC 5952 text", () => {
    expect(sourceOf("2001:DB8:1:2:3::/64")).toEqual({ prefix: "2001:db8:1::/48", host: "2001:db8:1:2::/64" });
    expect(sourceOf("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff")).toEqual({ prefix: "2001:db8:aaaa::/48", host: "2001:db8:aaaa:bbbb::/64" });
    expect(sourceOf("2001:db8::1")).toEqual({ prefix: "2001:db8::/48", host: "2001:db8::/64" });
  });

  it("is none for anything that is not a four-part decimal IPv4 or an IPv6 address", () => {
    for (const text of [null, undefined, "", "1.2.3", "0x7f.0.0.1", "not-an-ip", "192.0.2.77/", "2001:db8::1/6x", "1.2.3.4 5", "192.0.2/8.77"]) {
      expect(sourceOf(text)).toBeNull();
    }
  });
});

describe("the store bounds' shares", () => {
  it("keeps a fifth of a bound as its reserve, rounded up, also past 2^53 / 100", () => {
    expect(reserveOf(10)).toBe(2);
    expect(reserveOf(11)).toBe(3); // 2.2
    expect(reserveOf(0)).toBe(0);
    // At and past Number.MAX_SAFE_INTEGER / 100 (90071992547409.91) a hundredth is taken first.
    expect(reserveOf(90071992547409)).toBe(18014398509482);
    expect(reserveOf(90071992547410)).toBe(18014398509500);
    expect(reserveOf(Number.MAX_SAFE_INTEGER)).toBe(1801439850948200);
    // Exactly at it (not a whole number of bytes, but the rule's edge): the hundredth first, 900719925475 * 20.
    expect(reserveOf(Number.MAX_SAFE_INTEGER / 100)).toBe(18014398509500);
  });

  const config = {
    CITY_STORE_VAULT_BYTES: 10_000_007,
    CITY_STORE_VAULT_BYTES_PER_HOUR: 100_099,
    CITY_STORE_LANTERNS_BYTES: 1_000,
    CITY_STORE_LANTERNS_BYTES_PER_HOUR: 100,
    CITY_STORE_NEWCOMER_PERCENT: 25,
    CITY_STORE_NEWCOMER_SUBJECT_PERCENT: 5,
    CITY_STORE_NEWCOMER_NETWORK_PERCENT: 10,
    CITY_STORE_NETWORK_PERCENT: 12,
    CITY_STORE_SUBJECT_PERCENT: 2,
    CITY_STORE_SUBJECT_TOTAL_PERMILLE: 2,
  } as unknown as Env;

  it("cuts a store's hour and total as configured, each rounded down (the reserve up)", () => {
    // Newcomers' hour: 25 % of 100,099 = 25,024.75 -> 25,024; one newcomer 5 % of it (1,251.2),
    // one network's newcomers 10 % (2,502.4); one network's citizens 12 % of the hour (12,011.88);
    // a settled citizen 2 % of the hour per day (2,001.98); the
    // citizen's own total 2 per mille of 10,000,007 (20,000.014); the reserve 20 % rounded up.
    expect(storeShares("vault", config)).toEqual({
      store: "vault",
      newcomerSubjectPerHour: 1_251,
      newcomerNetworkPerHour: 2_502,
      networkPerHour: 12_011,
      settledPerHourPerDay: 2_001,
      subjectTotal: 20_000,
      newcomerTotal: 8_000_005,
      reserveTotal: 2_000_002,
      reservePerHour: 75_075,
    });
    // A store without a per-citizen total (lanterns: putting one out frees its bytes).
    expect(storeShares("lanterns", config)).toEqual({
      store: "lanterns",
      newcomerSubjectPerHour: 1,
      newcomerNetworkPerHour: 2,
      networkPerHour: 12,
      settledPerHourPerDay: 2,
      subjectTotal: null,
      newcomerTotal: 800,
      reserveTotal: 200,
      reservePerHour: 75,
    });
  });

  it("gives a newcomer or a visitor the newcomer's hour share, a settled citizen its days' (at most 4), never less", () => {
    const shares = { newcomerSubjectPerHour: 1_250, settledPerHourPerDay: 2_000 } as ReturnType<typeof storeShares>;
    expect(subjectHourShare(shares, null)).toBe(1_250);
    expect(subjectHourShare(shares, 0)).toBe(1_250);
    expect(subjectHourShare(shares, 0.99)).toBe(1_250);
    expect(subjectHourShare(shares, 1)).toBe(2_000);
    expect(subjectHourShare(shares, 1.9)).toBe(2_000);
    expect(subjectHourShare(shares, 2)).toBe(4_000);
    expect(subjectHourShare(shares, 4)).toBe(8_000);
    expect(subjectHourShare(shares, 5)).toBe(8_000);
    expect(subjectHourShare(shares, 400)).toBe(8_000);
    const small = { newcomerSubjectPerHour: 1_250, settledPerHourPerDay: 500 } as ReturnType<typeof storeShares>;
    expect(subjectHourShare(small, 1)).toBe(1_250);
    expect(subjectHourShare(small, 3)).toBe(1_500);
  });

  it("counts a visitor by its IPv4 /24 or IPv6 /48, everything else as the one unknown source", () => {
    expect(visitorSubject("192.0.2.77")).toBe("src:192.0.2.0/24");
    expect(visitorSubject("2001:DB8:1:2::/64")).toBe("src:2001:db8:1::/48");
    expect(visitorSubject("2001:db8:1:2:3:4:5:6")).toBe("src:2001:db8:1::/48");
    // Three groups are enough: a /64 written with its /48's three.
    expect(visitorSubject("2001:db8:1::/64")).toBe("src:2001:db8:1::/48");
    for (const ip of [null, "", "2001:db8::/64", "fe80:zz:1:2::/64", "12345:1:2::/64", "::1", "1:2", "2001:db8:1:2::/64x", "2001:db8:1::/64:5"]) {
      expect(visitorSubject(ip)).toBe("src:unknown");
    }
    expect(visitorShare("192.0.2.1")).toEqual({ id: "src:192.0.2.0/24", did: null });
    expect(visitorShare(null)).toEqual({ id: "src:unknown", did: null });
  });

  it("counts a citizen by its DID", () => {
    expect(citizenSubject("did:key:z6Mkalice")).toBe("did:did:key:z6Mkalice");
    expect(citizenShare("did:key:z6Mkalice")).toEqual({ id: "did:did:key:z6Mkalice", did: "did:key:z6Mkalice" });
  });
});
