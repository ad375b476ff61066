import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { emissionMs, gcraRetryAfterSeconds, gcraTerms, bucketMs, bucketOf, countsOf, RATE_BUCKETS, type Window } from "@/lib/city/bounds";
import { checkNonce, mintNonce, NONCE_CLOCK_SKEW_SECONDS } from "@/lib/city/challenge/nonce-mac";
import { freesAt, secondsUntil, usedOf } from "@/lib/city/bounds/rate-buckets";

/**
 * The pure arithmetic of the city's bounds, with oracles of their own: the gate nonce's wire format
 * (issue 42: 6 bytes of issue time in ms, big-endian, 4 random bytes, the first 6 bytes of
 * HMAC-SHA256 over those 10) built with node:crypto; GCRA's pace and retry and the bucketed
 * window's counts as literals worked out by hand from their definitions (lib/city/bounds/gcra.ts,
 * lib/city/bounds/rate-buckets.ts).
 */
const KEY = new Uint8Array(32).map((_, i) => 0xa0 + i);
/** A nonce as the format says, written here: `issuedMs`, the given 4 bytes, the MAC under `key`. */
function craft(issuedMs: number, random = "0badcafe", key: Uint8Array = KEY): string {
  const signed = Buffer.alloc(10);
  signed.writeUIntBE(issuedMs, 0, 6);
  Buffer.from(random, "hex").copy(signed, 6);
  return signed.toString("hex") + createHmac("sha256", key).update(signed).digest().subarray(0, 6).toString("hex");
}
const T0 = Date.UTC(2026, 10, 29, 8, 0, 0, 123);

describe("the gate nonce's format (lib/city/challenge/nonce-mac.ts), against one built with node:crypto", () => {
  it("mints 6 bytes of issue time, 4 random, then HMAC-SHA256's first 6 bytes over the 10", () => {
    const { nonce, expiresAt } = mintNonce(KEY, new Date(T0));
    const bytes = Buffer.from(nonce, "hex");
    expect(bytes.length).toBe(16);
    expect(bytes.readUIntBE(0, 6)).toBe(T0);
    expect(nonce).toBe(craft(T0, bytes.subarray(6, 10).toString("hex")));
    expect(expiresAt.getTime()).toBe(T0 + 600_000);
    // A time past 2^32 ms (1970 + 49 days) keeps its high bytes: 2^40 + 5.
    const far = 2 ** 40 + 5;
    expect(Buffer.from(mintNonce(KEY, new Date(far)).nonce, "hex").readUIntBE(0, 6)).toBe(far);
  });

  it("takes a nonce built outside the code, fresh from its issue to 600 s on, kept 600 + 5 s", () => {
    const nonce = craft(T0);
    expect(checkNonce(KEY, nonce, new Date(T0))).toEqual({ keptUntil: new Date(T0 + 605_000) });
    expect(checkNonce(KEY, nonce, new Date(T0 + 599_999))).toEqual({ keptUntil: new Date(T0 + 605_000) });
    expect(checkNonce(KEY, nonce, new Date(T0 + 600_000))).toBeNull();
    expect(checkNonce(KEY, nonce, new Date(T0 - 5_000))).not.toBeNull();
    expect(checkNonce(KEY, nonce, new Date(T0 - 5_001))).toBeNull();
    expect(NONCE_CLOCK_SKEW_SECONDS).toBe(5);
  });

  it("refuses a MAC under another key, a MAC one bit off in its first or last byte, and what is not 32 lowercase hex", () => {
    expect(checkNonce(KEY, craft(T0, "0badcafe", new Uint8Array(32)), new Date(T0))).toBeNull();
    const nonce = craft(T0);
    const flip = (at: number) => {
      const bytes = Buffer.from(nonce, "hex");
      bytes[at]! ^= 1;
      return bytes.toString("hex");
    };
    expect(checkNonce(KEY, flip(10), new Date(T0))).toBeNull();
    expect(checkNonce(KEY, flip(15), new Date(T0))).toBeNull();
    expect(checkNonce(KEY, flip(9), new Date(T0))).toBeNull();
    for (const bad of [nonce.toUpperCase(), `${nonce}00`, nonce.slice(2), `x${nonce}`, `${nonce}x`, `${nonce.slice(0, 31)}g`])
      expect(checkNonce(KEY, bad, new Date(T0))).toBeNull();
  });

  it("reads the issue time from its high two bytes too: a nonce from 2^32 ms later is not fresh at T0", () => {
    const later = craft(T0 + 2 ** 32);
    expect(checkNonce(KEY, later, new Date(T0))).toBeNull();
    expect(checkNonce(KEY, later, new Date(T0 + 2 ** 32))).toEqual({ keptUntil: new Date(T0 + 2 ** 32 + 605_000) });
  });
});

describe("GCRA arithmetic (lib/city/bounds/gcra.ts)", () => {
  const rate = { limit: 4, windowSeconds: 60 };

  it("moves the tat on by window / limit", () => {
    expect(emissionMs(rate)).toBe(15_000);
    expect(emissionMs({ limit: 3, windowSeconds: 1 })).toBeCloseTo(333.333, 3);
  });

  it("tells a refused event when it fits: the tat plus one interval, minus the window, in whole seconds, at least 1", () => {
    const now = new Date(1_000_000);
    // tat = now + 60 s: fits when tat + 15 s - 60 s = now + 15 s.
    expect(gcraRetryAfterSeconds(rate, new Date(1_060_000), now)).toBe(15);
    // 14.001 s rounds up to 15.
    expect(gcraRetryAfterSeconds(rate, new Date(1_059_001), now)).toBe(15);
    expect(gcraRetryAfterSeconds(rate, new Date(1_059_000), now)).toBe(14);
    // No tat (or one that fits already): at least one second.
    expect(gcraRetryAfterSeconds(rate, null, now)).toBe(1);
    expect(gcraRetryAfterSeconds(rate, new Date(1_040_000), now)).toBe(1);
  });

  it("publishes its burst and pace", () => {
    expect(gcraTerms(rate)).toBe("GCRA, sliding: a burst of 4, then one every 15 s, so at most 4 + t / 15 in any t seconds");
    expect(gcraTerms({ limit: 3, windowSeconds: 1 })).toBe("GCRA, sliding: a burst of 3, then one every 0.3 s, so at most 3 + t / 0.3 in any t seconds");
    expect(gcraTerms({ limit: 600, windowSeconds: 3600 })).toBe("GCRA, sliding: a burst of 600, then one every 6 s, so at most 600 + t / 6 in any t seconds");
  });
});

describe("the bucketed window (lib/city/bounds/rate-buckets.ts)", () => {
  // 60 s in 12 buckets: 5 s each. 61 s: 5,083.33 ms, rounded up to 5,084.
  const minute: Window = { scope: "s", subject: "x", limit: 3, windowSeconds: 60 };

  it("cuts a window in 12 buckets, rounded up, and numbers them from the epoch", () => {
    expect(RATE_BUCKETS).toBe(12);
    expect(bucketMs(minute)).toBe(5_000);
    expect(bucketMs({ windowSeconds: 61 })).toBe(5_084);
    expect(bucketOf(minute, new Date(0))).toBe(0);
    expect(bucketOf(minute, new Date(4_999))).toBe(0);
    expect(bucketOf(minute, new Date(5_000))).toBe(1);
    expect(bucketOf(minute, new Date(1_234_567))).toBe(246);
  });

  it("reads counts as node-postgres parses them and as the other drivers' text", () => {
    expect(countsOf([1, "2", 0])).toEqual([1, 2, 0]);
    expect(countsOf("{1,0,3}")).toEqual([1, 0, 3]);
    expect(countsOf("{}")).toEqual([]);
    expect(countsOf(null)).toEqual([]);
    expect(countsOf(7)).toEqual([]);
  });

  it("counts every bucket of the window while current, and drops the oldest one per bucket gone by", () => {
    // 13 counts, newest first; bucket 100 is the newest.
    const state = { bucket: 100, counts: [1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4] };
    const at = (bucket: number) => new Date(bucket * 5_000 + 1);
    expect(usedOf(state, minute, at(100))).toBe(7);
    // A clock behind the row's newest bucket counts everything, as the row's own bucket.
    expect(usedOf(state, minute, at(99))).toBe(7);
    expect(usedOf(state, minute, at(101))).toBe(3);
    expect(usedOf(state, minute, at(110))).toBe(3);
    expect(usedOf(state, minute, at(111))).toBe(1);
    expect(usedOf(state, minute, at(112))).toBe(1);
    expect(usedOf(state, minute, at(113))).toBe(0);
    expect(usedOf(state, minute, at(500))).toBe(0);
  });

  it("finds when the window has room again: now when it has; else the first bucket that drops enough", () => {
    const state = { bucket: 100, counts: [1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4] };
    const now = new Date(100 * 5_000 + 1_234);
    expect(freesAt(state, 8, minute, now)).toBe(now.getTime());
    // limit 7: 7 counted now; bucket 101 drops the 4.
    expect(freesAt(state, 7, minute, now)).toBe(101 * 5_000);
    // limit 3: needs 2 or fewer: bucket 111 drops the 2.
    expect(freesAt(state, 3, minute, now)).toBe(111 * 5_000);
    // limit 1: needs 0: bucket 113 drops the last 1.
    expect(freesAt(state, 1, minute, now)).toBe(113 * 5_000);
    // No limit: a whole window from now.
    expect(freesAt(state, 0, minute, now)).toBe(now.getTime() + 60_000);
    // A clock behind the row: searched from the row's bucket on.
    expect(freesAt(state, 7, minute, new Date(95 * 5_000))).toBe(101 * 5_000);
    // Room now, later than the row's bucket.
    expect(freesAt(state, 4, minute, new Date(101 * 5_000 + 7))).toBe(101 * 5_000 + 7);
  });

  it("searches from the later of now's bucket and the row's, up to the bucket that drops the whole row", () => {
    const state = { bucket: 100, counts: [1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4] };
    // Now in bucket 113, limit 3: bucket 111 already had room, but the answer is now, not a past bucket.
    expect(freesAt(state, 3, minute, new Date(113 * 5_000 + 1))).toBe(113 * 5_000 + 1);
    // A clock behind the row with room: the row's own bucket, not now.
    expect(freesAt(state, 8, minute, new Date(95 * 5_000))).toBe(100 * 5_000);
    // Room only from the row's 13th bucket on (bucket 100 + 13): now, when now is inside it.
    expect(freesAt(state, 1, minute, new Date(113 * 5_000 + 7))).toBe(113 * 5_000 + 7);
    // Freed by bucket 112 (100 + 12), which drops the 2 and keeps the 0.
    expect(freesAt({ bucket: 100, counts: [0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] }, 1, minute, new Date(100 * 5_000))).toBe(112 * 5_000);
  });

  it("gives the last bucket's end when a longer row never drops below the limit within the search", () => {
    const state = { bucket: 10, counts: Array.from({ length: 20 }, () => 1) };
    expect(freesAt(state, 1, minute, new Date(10 * 5_000))).toBe((10 + RATE_BUCKETS + 1) * 5_000);
  });

  it("rounds seconds until a moment up, at least 1", () => {
    const now = new Date(10_000);
    expect(secondsUntil(10_000, now)).toBe(1);
    expect(secondsUntil(5_000, now)).toBe(1);
    expect(secondsUntil(12_000, now)).toBe(2);
    expect(secondsUntil(12_001, now)).toBe(3);
  });
});
