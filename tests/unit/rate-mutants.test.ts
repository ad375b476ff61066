import { describe, expect, it } from "vitest";
import { CityError } from "@/lib/errors";
import { requireSlotIn, requireTaken, slotOf, slotRefusal, type Window } from "@/lib/city/rate";

/** Reading a taken rate window back and its 429 (the pure parts of lib/city/rate.ts), fixed cases. */
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

describe("a taken slot read back", () => {
  it("is none when the statement took none (allowed null or absent)", () => {
    expect(slotOf({ slot_allowed: null, slot_used: 3 }, "slot", WINDOW, NOW)).toBeNull();
    expect(slotOf({}, "slot", WINDOW, NOW)).toBeNull();
    expect(slotOf({ slot_allowed: true, slot_used: 1 }, "other", WINDOW, NOW)).toBeNull();
  });

  it("counts the attempts and what remains when allowed, never below zero", () => {
    expect(slotOf({ slot_allowed: true, slot_used: "2" }, "slot", WINDOW, NOW)).toEqual({ allowed: true, used: 2, remaining: 3, retryAfterSeconds: 0 });
    expect(slotOf({ slot_allowed: true, slot_used: 5 }, "slot", WINDOW, NOW)).toEqual({ allowed: true, used: 5, remaining: 0, retryAfterSeconds: 0 });
    expect(slotOf({ slot_allowed: true, slot_used: 7 }, "slot", WINDOW, NOW)).toEqual({ allowed: true, used: 7, remaining: 0, retryAfterSeconds: 0 });
    expect(slotOf({ take_allowed: true, take_used: 1 }, "take", WINDOW, NOW)).toEqual({ allowed: true, used: 1, remaining: 4, retryAfterSeconds: 0 });
  });

  it("when refused, waits until the oldest counted attempt leaves the window, rounded up, at least a second", () => {
    // Oldest 20.5 s ago in a 60 s window: 39.5 s left, so 40.
    expect(slotOf({ slot_allowed: false, slot_used: 5, slot_oldest: new Date("2026-01-01T00:09:39.500Z") }, "slot", WINDOW, NOW)).toEqual({
      allowed: false,
      used: 5,
      remaining: 0,
      retryAfterSeconds: 40,
    });
    // As PostgreSQL text.
    expect(slotOf({ slot_allowed: false, slot_used: 5, slot_oldest: "2026-01-01T00:09:30.000Z" }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(30);
    // Already out of the window (a clock step): one second, never zero or less.
    expect(slotOf({ slot_allowed: false, slot_used: 5, slot_oldest: "2026-01-01T00:08:00.000Z" }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(1);
    expect(slotOf({ slot_allowed: false, slot_used: 5, slot_oldest: "2026-01-01T00:09:00.000Z" }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(1);
    expect(slotOf({ slot_allowed: false, slot_used: 5, slot_oldest: "2026-01-01T00:09:00.001Z" }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(1);
    expect(slotOf({ slot_allowed: false, slot_used: 5, slot_oldest: "2026-01-01T00:09:01.001Z" }, "slot", WINDOW, NOW)!.retryAfterSeconds).toBe(2);
    // No attempt counted (a limit of 0): the whole window.
    expect(slotOf({ slot_allowed: false, slot_used: 0, slot_oldest: null }, "slot", WINDOW, NOW)).toEqual({
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
    expect(requireSlotIn({ slot_allowed: true, slot_used: 4 }, WINDOW, NOW, "posts")).toEqual({ allowed: true, used: 4, remaining: 1, retryAfterSeconds: 0 });
    const err = refusalOf(() => requireSlotIn({ slot_allowed: false, slot_used: 5, slot_oldest: "2026-01-01T00:09:50.000Z" }, WINDOW, NOW, "mails"));
    expect(err.detail).toBe("At most 5 mails per 60 seconds; try again in 50 s.");
  });
});
