import { describe, expect, it } from "vitest";
import { checkNonce, mintNonce, NONCE_CLOCK_SKEW_SECONDS } from "@/lib/city/challenge/nonce-mac";

/*
 * The gate nonce's own rules, without a database (issue 42): 32 lowercase hex, fresh for 600 s from
 * its issue time, made only under the city's MAC key. Single use is the database's (gate-nonces.test.ts).
 */
describe("a gate nonce checked by its MAC", () => {
  const key = new Uint8Array(32).fill(7);
  const t0 = new Date(Date.UTC(2026, 10, 29, 8, 0, 0, 123));

  it("is 32 lowercase hex, differs at every issue, and is fresh from its issue to its 600th second", () => {
    const { nonce, expiresAt } = mintNonce(key, t0);
    expect(nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(expiresAt.getTime() - t0.getTime()).toBe(600_000);
    expect(new Set(Array.from({ length: 200 }, () => mintNonce(key, t0).nonce)).size).toBe(200);
    expect(checkNonce(key, nonce, t0)).toEqual({ keptUntil: new Date(t0.getTime() + 600_000 + NONCE_CLOCK_SKEW_SECONDS * 1000) });
    expect(checkNonce(key, nonce, new Date(t0.getTime() + 599_999))).not.toBeNull();
    expect(checkNonce(key, nonce, new Date(t0.getTime() + 600_000))).toBeNull();
  });

  it("is refused under another key (another city, or after the signing key rotated)", () => {
    const { nonce } = mintNonce(key, t0);
    expect(checkNonce(new Uint8Array(32).fill(8), nonce, t0)).toBeNull();
  });

  it("is refused when any of its 16 bytes is altered, or when it is not 32 lowercase hex", () => {
    const { nonce } = mintNonce(key, t0);
    for (let at = 0; at < 32; at++) {
      const altered = `${nonce.slice(0, at)}${((parseInt(nonce[at]!, 16) + 1) % 16).toString(16)}${nonce.slice(at + 1)}`;
      expect(checkNonce(key, altered, t0), altered).toBeNull();
    }
    for (const bad of [nonce.toUpperCase(), nonce.slice(1), `${nonce}0`, `${nonce.slice(0, 31)}g`]) expect(checkNonce(key, bad, t0)).toBeNull();
  });

  it("takes an issue time up to the clock skew ahead (another instance's clock) and refuses one further ahead", () => {
    const ahead = (ms: number) => mintNonce(key, new Date(t0.getTime() + ms)).nonce;
    expect(checkNonce(key, ahead(NONCE_CLOCK_SKEW_SECONDS * 1000), t0)).not.toBeNull();
    expect(checkNonce(key, ahead(NONCE_CLOCK_SKEW_SECONDS * 1000 + 1), t0)).toBeNull();
  });
});
