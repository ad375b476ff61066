import { describe, expect, it } from "vitest";
import { clientAddress, doorRequestOf } from "@/lib/doors/invoke";
import { normalKey } from "@/lib/city/names";

const headers = (h: Record<string, string>) => new Headers(h);

describe("the client address from trusted proxies (CITY_TRUSTED_PROXIES)", () => {
  it("takes the N-th X-Forwarded-For entry from the right; the client's own entries to the left are ignored", () => {
    const h = headers({ "x-forwarded-for": "6.6.6.6, 203.0.113.9, 10.0.0.2" });
    expect(clientAddress(h, 1)).toBe("10.0.0.2");
    expect(clientAddress(h, 2)).toBe("203.0.113.9");
    expect(clientAddress(h, 3)).toBe("6.6.6.6");
    // Fewer hops than trusted proxies: the leftmost is as far as the chain goes.
    expect(clientAddress(h, 5)).toBe("6.6.6.6");
  });

  it("ignores forwarded headers with 0 trusted proxies", () => {
    expect(clientAddress(headers({ "x-forwarded-for": "203.0.113.9", "x-real-ip": "203.0.113.10" }), 0)).toBeNull();
  });

  it("on Vercel reads x-vercel-forwarded-for, then x-real-ip, never a client-written X-Forwarded-For head", () => {
    expect(clientAddress(headers({ "x-vercel-forwarded-for": "198.51.100.4", "x-forwarded-for": "6.6.6.6, 198.51.100.4" }), "vercel")).toBe("198.51.100.4");
    expect(clientAddress(headers({ "x-real-ip": "198.51.100.5", "x-forwarded-for": "6.6.6.6" }), "vercel")).toBe("198.51.100.5");
  });

  it("falls back to x-real-ip without X-Forwarded-For, and is unknown with neither", () => {
    expect(clientAddress(headers({ "x-real-ip": "192.0.2.8" }), 1)).toBe("192.0.2.8");
    expect(clientAddress(headers({}), 1)).toBeNull();
  });

  it("is what a door sees: by default one trusted proxy, so a spoofed leftmost entry does not move the address", () => {
    const request = new Request("http://city.test/gate", { headers: { "x-forwarded-for": "1.2.3.4, 192.0.2.77" } });
    expect(doorRequestOf(request, "POST").ip).toBe("192.0.2.77");
  });
});

describe("the published normal form of names and origins", () => {
  it("folds case, compatibility forms and Cyrillic or Greek look-alikes to one key", () => {
    expect(normalKey("\u0430lice")).toBe(normalKey("Alice"));
    expect(normalKey("Example.com")).toBe(normalKey("example.com"));
    expect(normalKey("\uff21lice")).toBe(normalKey("alice"));
    expect(normalKey("\u039Alio")).toBe(normalKey("klio"));
    expect(normalKey("\u0391LICE")).toBe(normalKey("alice"));
    expect(normalKey("alice")).not.toBe(normalKey("alicia"));
  });
});

describe("what /llms.txt tells agents about credentials", () => {
  it("publishes the recovery message, the lesser session token and the revoke-all door", async () => {
    const { buildLlmsTxt } = await import("@/lib/doors/llms");
    const { registry } = await import("@/lib/doors/registry");
    const text = buildLlmsTxt(registry, "http://city.test");
    expect(text).toContain("CITY-RECOVER/1|recover|<did>|<nonce>");
    expect(text).toMatch(/POST \/api\/tokens\/revoke-all/);
    expect(text).toMatch(/Mint a gate session token[^\n]*Needs the citizen secret/);
    expect(text).toMatch(/admissions per 3600 s per city/);
  });
});

describe("the gate's environment", () => {
  it("reads CITY_TRUSTED_PROXIES as vercel or a hop count, and the admissions ceiling with 600 by default and 0 as off", async () => {
    const { parseEnv, EnvError } = await import("@/lib/env");
    expect(parseEnv({}).CITY_TRUSTED_PROXIES).toBeUndefined();
    expect(parseEnv({ CITY_TRUSTED_PROXIES: "vercel" }).CITY_TRUSTED_PROXIES).toBe("vercel");
    expect(parseEnv({ CITY_TRUSTED_PROXIES: "2" }).CITY_TRUSTED_PROXIES).toBe(2);
    expect(parseEnv({ CITY_TRUSTED_PROXIES: "0" }).CITY_TRUSTED_PROXIES).toBe(0);
    expect(() => parseEnv({ CITY_TRUSTED_PROXIES: "all" })).toThrow(EnvError);
    expect(parseEnv({}).CITY_GATE_ADMISSIONS_PER_HOUR).toBe(600);
    expect(parseEnv({ CITY_GATE_ADMISSIONS_PER_HOUR: "0" }).CITY_GATE_ADMISSIONS_PER_HOUR).toBe(0);
  });
});
