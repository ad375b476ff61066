import { afterEach, describe, expect, it, vi } from "vitest";
import { announceAddressMode, clientAddress, normalAddress } from "@/lib/doors/pipeline/client-address";

/** Client addresses (lib/doors/pipeline/client-address.ts) against fixed cases, beside client-address.test.ts. */
const headers = (h: Record<string, string>) => new Headers(h);

describe("X-Forwarded-For behind N proxies", () => {
  it("trusts nothing when one of the N trusted entries is empty, wherever it is", () => {
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6, 203.0.113.9, " }), 2)).toBeNull();
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6, , 10.0.0.2" }), 2)).toBeNull();
    expect(clientAddress(headers({ "x-forwarded-for": ", 203.0.113.9, 10.0.0.2" }), 2)).toBe("203.0.113.9");
    expect(clientAddress(headers({ "x-forwarded-for": "" }), 1)).toBeNull();
    // An empty entry among the trusted ones, not the one read (each entry trimmed before the check).
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6, 203.0.113.9, , 10.0.0.2" }), 3)).toBeNull();
    expect(clientAddress(headers({ "x-forwarded-for": "6.6.6.6, 203.0.113.9,  , 10.0.0.2" }), 3)).toBeNull();
  });

  it("takes exactly N entries when N came, and trims each", () => {
    expect(clientAddress(headers({ "x-forwarded-for": "203.0.113.9 ,10.0.0.2" }), 2)).toBe("203.0.113.9");
    expect(clientAddress(headers({ "x-forwarded-for": " 203.0.113.9 " }), 1)).toBe("203.0.113.9");
    expect(clientAddress(headers({ "x-forwarded-for": "2001:db8:1:2::5, 10.0.0.2" }), 2)).toBe("2001:db8:1:2::/64");
  });
});

describe("on Vercel", () => {
  it("takes the first entry of x-vercel-forwarded-for, and x-real-ip only when it is absent", () => {
    expect(clientAddress(headers({ "x-vercel-forwarded-for": "198.51.100.4, 10.0.0.1" }), "vercel")).toBe("198.51.100.4");
    expect(clientAddress(headers({ "x-vercel-forwarded-for": "bogus", "x-real-ip": "198.51.100.5" }), "vercel")).toBeNull();
    expect(clientAddress(headers({ "x-real-ip": " 198.51.100.5 " }), "vercel")).toBe("198.51.100.5");
    expect(clientAddress(headers({}), "vercel")).toBeNull();
  });
});

describe("one bucket per host", () => {
  it.each([
    ["192.0.2.1", "192.0.2.1"],
    ["  192.0.2.1\t", "192.0.2.1"],
    ["192.0.2.1:80", "192.0.2.1"],
    ["[192.0.2.1]:80", "192.0.2.1"],
    ["[2001:db8::7]", "2001:db8:0:0::/64"],
    ["[2001:db8:a:b::7]:8080", "2001:db8:a:b::/64"],
    ["2001:0db8:000a:0B0c::1", "2001:db8:a:b0c::/64"],
    ["::1", "0:0:0:0::/64"],
    ["::", "0:0:0:0::/64"],
    ["1::", "1:0:0:0::/64"],
    ["1:2:3::", "1:2:3:0::/64"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["fe80:1:2:3::1%2", "fe80:1:2:3::/64"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::FFFF:192.0.2.1", "192.0.2.1"],
    ["[::ffff:192.0.2.1]:443", "192.0.2.1"],
    ["::ffff:c000:201", "0:0:0:0::/64"],
    ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"],
    ["::192.0.2.1", "0:0:0:0::/64"],
    ["1:2::192.0.2.1", "1:2:0:0::/64"],
    ["1::4:5:6:7:8", "1:0:0:4::/64"],
    ["::ffff:192.0.2.1%eth0", "192.0.2.1"],
    ["1::ffff:192.0.2.1", "1:0:0:0::/64"],
  ])("%j is %j", (raw, bucket) => {
    expect(normalAddress(raw)).toBe(bucket);
  });

  it.each([
    "",
    "   ",
    "192.0.2",
    "192.0.2.1.5",
    "256.0.0.1",
    "192.0.2.1:",
    "192.0.2.1:x",
    "x192.0.2.1:80",
    "[192.0.2.1",
    "2001:db8::7]",
    "[]",
    "::ffff:300.0.0.1",
    "::ffff:192.0.2.1:80",
    "1:2:3:4:5:6:7:8:9",
    "localhost",
    "2001:db8::g",
    "x[192.0.2.1]:80",
    "[192.0.2.1]:80x",
    "[2001:db8::1]x",
  ])("%j is unknown", (raw) => {
    expect(normalAddress(raw)).toBeNull();
  });

  it("is unknown for null and undefined", () => {
    expect(normalAddress(null)).toBeNull();
    expect(normalAddress(undefined)).toBeNull();
  });
});

describe("said at start", () => {
  afterEach(() => vi.restoreAllMocks());

  it("one info line naming the mode when addresses are known, no error", () => {
    const out: string[] = [];
    const err: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: string) => void out.push(line));
    vi.spyOn(console, "error").mockImplementation((line: string) => void err.push(line));
    announceAddressMode(2);
    announceAddressMode("vercel");
    expect(err).toEqual([]);
    expect(out.map((l) => JSON.parse(l) as Record<string, unknown>).map(({ level, msg, mode }) => ({ level, msg, mode }))).toEqual([
      { level: "info", msg: "client addresses", mode: "2" },
      { level: "info", msg: "client addresses", mode: "vercel" },
    ]);
  });

  it("one warning line with the whole advice when they are unknown", () => {
    const err: string[] = [];
    vi.spyOn(console, "log").mockImplementation(() => undefined);
    vi.spyOn(console, "warn").mockImplementation((line: string) => void err.push(line));
    announceAddressMode(0);
    expect(err).toHaveLength(1);
    const line = JSON.parse(err[0]!) as Record<string, unknown>;
    expect([line.level, line.msg]).toEqual(["warn", "CLIENT ADDRESSES UNKNOWN"]);
    expect(line.detail).toBe(
      "CITY_TRUSTED_PROXIES is 0 or unset off Vercel, so X-Forwarded-For is not trusted and per-address limits are off; only the city-wide ceilings and per-origin limits hold. On your own machine that is expected. Behind N reverse proxies that append to X-Forwarded-For, set CITY_TRUSTED_PROXIES=N.",
    );
  });
});

describe("the configured mode", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("is CITY_TRUSTED_PROXIES when set, on Vercel or not, and is used by default", async () => {
    vi.resetModules();
    vi.stubEnv("CITY_TRUSTED_PROXIES", "2");
    vi.stubEnv("VERCEL", "1");
    const fresh = await import("@/lib/doors/pipeline/client-address");
    expect(fresh.addressMode()).toBe(2);
    expect(fresh.clientAddress(headers({ "x-forwarded-for": "203.0.113.9, 10.0.0.2" }))).toBe("203.0.113.9");
    vi.resetModules();
    vi.stubEnv("CITY_TRUSTED_PROXIES", "");
    vi.stubEnv("VERCEL", "0");
    expect((await import("@/lib/doors/pipeline/client-address")).addressMode()).toBe(0);
  });
});
