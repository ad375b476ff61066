import { afterEach, describe, expect, it, vi } from "vitest";
import { announceAddressMode, clientAddress, normalAddress } from "@/lib/doors/pipeline/client-address";

const headers = (h: Record<string, string>) => new Headers(h);

describe("the client address from trusted proxies (CITY_TRUSTED_PROXIES)", () => {
  it("takes the N-th X-Forwarded-For entry from the right; the client's own entries to the left are ignored", () => {
    const h = headers({ "x-forwarded-for": "6.6.6.6, 203.0.113.9, 10.0.0.2" });
    expect(clientAddress(h, 1)).toBe("10.0.0.2");
    expect(clientAddress(h, 2)).toBe("203.0.113.9");
    expect(clientAddress(h, 3)).toBe("6.6.6.6");
  });

  it("trusts nothing when fewer entries came than proxies are configured (a proxy did not append)", () => {
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6, 203.0.113.9" }), 3)).toBeNull();
    expect(clientAddress(headers({ "x-forwarded-for": ", 203.0.113.9" }), 2)).toBeNull();
    // An empty entry among the trusted ones: a proxy appended nothing, so the address before it is
    // the client's own claim, not what the outermost trusted proxy saw.
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6, 203.0.113.9, " }), 2)).toBeNull();
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6, , 10.0.0.2" }), 2)).toBeNull();
    expect(clientAddress(headers({}), 1)).toBeNull();
  });

  it("never reads x-real-ip behind counted proxies: a client can send it as easily as X-Forwarded-For", () => {
    expect(clientAddress(headers({ "x-real-ip": "192.0.2.8" }), 1)).toBeNull();
  });

  it("ignores forwarded headers with 0 trusted proxies: the address is unknown", () => {
    expect(clientAddress(headers({ "x-forwarded-for": "203.0.113.9", "x-real-ip": "203.0.113.10" }), 0)).toBeNull();
  });

  it("on Vercel reads x-vercel-forwarded-for, then x-real-ip, never a client-written X-Forwarded-For", () => {
    expect(clientAddress(headers({ "x-vercel-forwarded-for": "198.51.100.4", "x-forwarded-for": "6.6.6.6, 198.51.100.4" }), "vercel")).toBe("198.51.100.4");
    expect(clientAddress(headers({ "x-real-ip": "198.51.100.5", "x-forwarded-for": "6.6.6.6" }), "vercel")).toBe("198.51.100.5");
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6" }), "vercel")).toBeNull();
  });

  it("is one bucket per host: IPv6 by its /64, IPv4-mapped as IPv4, ports dropped, anything else unknown", () => {
    expect(normalAddress("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(normalAddress("2001:DB8:1:2:ffff:1:2:3")).toBe("2001:db8:1:2::/64");
    expect(normalAddress("[2001:db8::7]:443")).toBe("2001:db8:0:0::/64");
    expect(normalAddress("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(normalAddress("192.0.2.1:5678")).toBe("192.0.2.1");
    expect(normalAddress("not-an-address")).toBeNull();
    expect(normalAddress("x".repeat(5000))).toBeNull();
    expect(clientAddress(headers({ "x-forwarded-for": "unknown" }), 1)).toBeNull();
  });
});

describe("the default: unknown unless configured", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("is `vercel` on Vercel and unknown (0) anywhere else when CITY_TRUSTED_PROXIES is unset", async () => {
    vi.resetModules();
    vi.stubEnv("CITY_TRUSTED_PROXIES", "");
    vi.stubEnv("VERCEL", "");
    const fresh = await import("@/lib/doors/pipeline/client-address");
    expect(fresh.addressMode()).toBe(0);
    // `next start` alone fills X-Forwarded-For only when none was sent, so a client's own is kept: never trusted by default.
    const { doorRequestOf: requestOf } = await import("@/lib/doors/pipeline/invoke");
    expect(requestOf(new Request("http://city.test/gate", { headers: { "x-forwarded-for": "1.2.3.4" } }), "POST").ip).toBeNull();
    vi.resetModules();
    vi.stubEnv("VERCEL", "1");
    expect((await import("@/lib/doors/pipeline/client-address")).addressMode()).toBe("vercel");
  });

  it("says so at start, in one line, when addresses are unknown", () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, "warn").mockImplementation((line: string) => void lines.push(line));
    announceAddressMode(0);
    spy.mockRestore();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/CLIENT ADDRESSES UNKNOWN/);
    // A warning a newcomer can act on, not an error on every local start.
    expect(JSON.parse(lines[0]!).level).toBe("warn");
    expect(lines[0]).toMatch(/On your own machine that is expected/);
    expect(lines[0]).toMatch(/CITY_TRUSTED_PROXIES=N/);
  });
});
