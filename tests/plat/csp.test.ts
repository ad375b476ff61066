import { describe, expect, it } from "vitest";
import { pagePolicy } from "@/lib/plat/csp";

describe("the plat's page policy", () => {
  it("allows no eval and no inline style in production", () => {
    const policy = pagePolicy("bm9uY2U=", false);
    expect(policy).toContain("script-src 'self' 'nonce-bm9uY2U=' 'strict-dynamic';");
    expect(policy).toContain("style-src 'self';");
    expect(policy).not.toMatch(/unsafe/);
  });

  it("under next dev, lets the framework's refresh and error overlay work (eval, inline styles), and nothing more", () => {
    const policy = pagePolicy("bm9uY2U=", true);
    expect(policy).toContain("script-src 'self' 'nonce-bm9uY2U=' 'strict-dynamic' 'unsafe-eval';");
    expect(policy).toContain("style-src 'self' 'unsafe-inline';");
    expect(policy.replace(/ 'unsafe-eval'| 'unsafe-inline'/g, "")).toBe(pagePolicy("bm9uY2U=", false));
  });

  it("takes the mode from NODE_ENV when not told", () => {
    // vitest runs with NODE_ENV=test: the production policy.
    expect(pagePolicy("bm9uY2U=")).toBe(pagePolicy("bm9uY2U=", false));
  });
});
