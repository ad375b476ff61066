import { describe, expect, it } from "vitest";
import { CityError } from "@/lib/errors";
import { requireSlotIn, requireTaken, slotOf, slotRefusal, type Window } from "@/lib/city/bounds";

/** Reading a taken rate window back (its counts per bucket) and its 429 (the pure parts of lib/city/bounds/rate.ts), fixed cases. */
const WINDOW: Window = { scope: "s", subject: "x", limit: 5, windowSeconds: 60 };
const NOW = new Date("2026-01-01T00:10:00.000Z");

function refusalOf(run: () => unknown): CityError {
  try {
    run();
  } catch (err) {
    if (err instanceof CityError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

/** Counts as a row holds them: 13 buckets, newest first, `at` placing counts (index: buckets before the newest). */
const counts = (at: Record<number, number>) => Array.from({ length: 13 }, (_, i) => at[i] ?? 0);
/** The bucket NOW falls in (5 s buckets: the 60 s window in twelve). */
const CUR = NOW.getTime() / 5000;

describe("a taken slot read back", () => {
  it("of a city-wide window, counts the stripe charged against its own share of the limit", () => {
    // 64 an hour over 32 stripes: each stripe lets 2 through; stripe 5 holds one now, so one remains.
    const city: Window = { scope: "s", subject: "city", limit: 64, windowSeconds: 60, stripes: 32 };
    expect(slotOf({ slot_allowed: true, slot_subject: "city/5", slot_counts: counts({ 0: 1 }), slot_bucket: CUR }, "slot", city, NOW)).toEqual({
      allowed: true,
      used: 1,
      remaining: 1,
      retryAfterSeconds: 0,
    });
  });

  it("is none when the statement took none (allowed null or absent)", () => {
    expect(slotOf({ slot_allowed: null, slot_counts: counts({ 0: 3 }), slot_bucket: CUR }, "slot", WINDOW, NOW)).toBeNull();
    expect(slotOf({}, "slot", WINDOW, NOW)).toBeNull();
    expect(slotOf({ slot_allowed: true, slot_counts: counts({ 0: 1 }), slot_bucket: CUR }, "other", WINDOW, NOW)).toBeNull();
  });

  it("counts the attempts still in the window and what remains when allowed, never below zero", () => {
    expect(slotOf({ slot_allowed: true, slot_counts: counts({ 0: 2 }), slot_bucket: String(CUR) }, "slot", WINDOW, NOW)).toEqual({
      allowed: true,
      used: 2,
      remaining: 3,
      retryAfterSeconds: 0,
    });
    expect(slotOf({ slot_allowed: true, slot_counts: counts({ 0: 3, 12: 2 }), slot_bucket: CUR }, "slot", WINDOW, NOW)).toEqual({
      allowed: true,
      used: 5,
      remaining: 0,
      retryAfterSeconds: 0,
    });
    expect(slotOf({ slot_allowed: true, slot_counts: counts({ 0: 7 }), slot_bucket: CUR }, "slot", WINDOW, NOW)).toMatchObject({ used: 7, remaining: 0 });
    // Kept a bucket ago: its oldest bucket has left the window and counts no more.
    expect(slotOf({ take_allowed: true, take_counts: counts({ 0: 1, 12: 4 }), take_bucket: CUR - 1 }, "take", WINDOW, NOW)).toEqual({
      allowed: true,
      used: 1,
      remaining: 4,
      retryAfterSeconds: 0,
    });
    // As PostgreSQL text.
    expect(slotOf({ slot_allowed: true, slot_counts: "{2,0,0,0,0,0,0,0,0,0,0,0,1}", slot_bucket: CUR }, "slot", WINDOW, NOW)).toMatchObject({ used: 3 });
  });

  it("when refused, waits until the bucket that frees a slot leaves the window, rounded up, at least a second", () => {
    // Five counted three buckets ago (15 s): that bucket leaves once it is 13 buckets old, in 50 s.
    expect(slotOf({ slot_allowed: false, slot_counts: counts({ 3: 5 }), slot_bucket: CUR }, "slot", WINDOW, NOW)).toEqual({
      allowed: false,
      used: 5,
      remaining: 0,
      retryAfterSeconds: 50,
    });
    // 1.5 s into the bucket: 48.5 s left, so 49.
    const later = new Date(NOW.getTime() + 1500);
    expect(slotOf({ slot_allowed: false, slot_counts: counts({ 3: 5 }), slot_bucket: CUR }, "slot", WINDOW, later)!.retryAfterSeconds).toBe(49);
    // Two buckets must leave before fewer than five count: the later one decides.
    expect(slotOf({ slot_allowed: false, slot_counts: counts({ 2: 1, 12: 4 }), slot_bucket: CUR }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(5);
    expect(slotOf({ slot_allowed: false, slot_counts: counts({ 2: 5, 12: 3 }), slot_bucket: CUR }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(55);
    // Kept by an instance whose clock runs a bucket ahead: counted from its newest bucket.
    expect(slotOf({ slot_allowed: false, slot_counts: counts({ 0: 5 }), slot_bucket: CUR + 1 }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(70);
    // Never zero or less.
    expect(
      slotOf({ slot_allowed: false, slot_counts: counts({ 12: 5 }), slot_bucket: CUR }, "slot", WINDOW, new Date(NOW.getTime() + 4999))!.retryAfterSeconds,
    ).toBe(1);
    // No attempt counted (a limit of 0): the whole window.
    expect(slotOf({ slot_allowed: false, slot_counts: counts({}), slot_bucket: CUR }, "slot", { ...WINDOW, limit: 0 }, NOW)).toEqual({
      allowed: false,
      used: 0,
      remaining: 0,
      retryAfterSeconds: 60,
    });
  });
});

describe("the 429 of a full window", () => {
  it("says the limit, the window and the wait, with Retry-After and the RateLimit fields", () => {
    const err = slotRefusal({ limit: 5, windowSeconds: 60 }, "posts", 12);
    expect(err.code).toBe("rate_limited");
    expect(err.detail).toBe("At most 5 posts per 60 seconds; try again in 12 s.");
    expect(err.options).toEqual({ retryAfterSeconds: 12, limit: { name: "posts", limit: 5, window_seconds: 60, remaining: 0 } });
  });

  it("is thrown for a refused slot and not for a taken one", () => {
    const taken = { allowed: true, used: 1, remaining: 4, retryAfterSeconds: 0 };
    expect(requireTaken(taken, WINDOW, "posts")).toBe(taken);
    const err = refusalOf(() => requireTaken({ allowed: false, used: 5, remaining: 0, retryAfterSeconds: 9 }, WINDOW, "posts"));
    expect(err.detail).toBe("At most 5 posts per 60 seconds; try again in 9 s.");
    expect(err.options.retryAfterSeconds).toBe(9);
  });

  it("reads the slot CTE of a statement and refuses a full one", () => {
    expect(requireSlotIn({ slot_allowed: true, slot_counts: counts({ 0: 4 }), slot_bucket: CUR }, WINDOW, NOW, "posts")).toEqual({
      allowed: true,
      used: 4,
      remaining: 1,
      retryAfterSeconds: 0,
    });
    const err = refusalOf(() => requireSlotIn({ slot_allowed: false, slot_counts: counts({ 2: 5 }), slot_bucket: CUR }, WINDOW, NOW, "mails"));
    expect(err.detail).toBe("At most 5 mails per 60 seconds; try again in 55 s.");
  });
});
