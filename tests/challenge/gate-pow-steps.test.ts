import { sql } from "drizzle-orm";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { bidStep, readCeilingStripes, type GateCircumstances, type GateLimits, type Verdict } from "@/lib/city/challenge";
import { steppedBidWindow, readSuggestedEffort } from "@/lib/city/challenge/gate-pow";
import { POW_BASE_EFFORT } from "@/lib/city/challenge/pow-effort";
import { bucketMs, bucketOf, cityWindow, STEP_CYCLE, stepPortion, stripesRetryAfter, stripesRoom, withReach, withSteps } from "@/lib/city/bounds";
import { stepRelease } from "@/lib/city/bounds/rate-stripes";
import { describeOnDatabases } from "../support/databases";
import { admissionsCounted, biddingPresentation, gateCircumstances, presentation, presentDirect, signedBySponsor } from "../support/gate";

/*
 * Fair under flood (docs/pow.md, SECURITY.md): keyless bids take the bids' part of the admissions
 * ceiling in steps. Each step (a twelfth of the hour) releases stepPortion(bids - open) of it, so a
 * bidding flood takes at most that in a step and the next step (at most 5 minutes away) opens new
 * bid slots; a bid past the step's portion is told so, with the seconds to the next step. Counted
 * on the ceiling's stripes in the statement that takes the slot: parallel bids never pass it.
 */

const STEP_MS = 300_000;

describe("the bids' step arithmetic (fixed vectors)", () => {
  it("releases a thirteenth of the bids' part a step, rounded down, at least one", () => {
    expect(STEP_CYCLE).toBe(13);
    expect([0, 1, 2, 12, 13, 25, 26, 30, 120, 1000].map(stepPortion)).toEqual([0, 1, 1, 1, 1, 1, 2, 2, 9, 76]);
  });

  it("releases the part's slots in turn, on the stripes that hold them", () => {
    // 600 an hour over 32 stripes, keyless reach 480, open share 360: 120 bid slots, 9 a step.
    const w = withSteps(withReach(cityWindow("gate-admissions", 600, 3600), 480), 360);
    const at = (step: number) =>
      stepRelease(w, step)
        .map((n, s) => (n ? `${s}:${n}` : ""))
        .filter(Boolean)
        .join(" ");
    // Step 0: slots 360..368 (stripes 8..16); step 1: 369..377 (17..25); step 13: 477..479 and 360..365.
    expect(at(0)).toBe("8:1 9:1 10:1 11:1 12:1 13:1 14:1 15:1 16:1");
    expect(at(1)).toBe("17:1 18:1 19:1 20:1 21:1 22:1 23:1 24:1 25:1");
    expect(at(13)).toBe("8:1 9:1 10:1 11:1 12:1 13:1 29:1 30:1 31:1");
    expect(stepRelease(w, 5_904_000).reduce((a, b) => a + b, 0)).toBe(9);
    // A small part: 20 an hour, 16 keyless, 12 open: 4 bid slots (stripes 12..15), one a step.
    const small = withSteps(withReach(cityWindow("gate-admissions", 20, 3600), 16), 12);
    expect([0, 1, 2, 3, 4, 5].map((k) => stepRelease(small, k).indexOf(1))).toEqual([12, 13, 14, 15, 12, 13]);
    // Not stepped: nothing released (its reach is its limit in every step).
    expect(stepRelease(withReach(cityWindow("gate-admissions", 20, 3600), 16), 3)).toEqual(new Array(20).fill(0));
  });

  it("never releases to a stripe, over any STEP_CYCLE steps in a row, more than its share of the part (so every step opens some)", () => {
    for (const [limit, reach, floor] of [
      [600, 480, 360],
      [120, 120, 90],
      [1000, 800, 600],
      [64, 64, 39],
    ] as const) {
      const w = withSteps(withReach(cityWindow("gate-admissions", limit, 3600), reach), floor);
      const n = w.stripes!;
      const share = (total: number, s: number) => Math.floor(total / n) + (s < total % n ? 1 : 0);
      for (let k = 0; k < 3 * STEP_CYCLE; k++) {
        const sums = new Array<number>(n).fill(0);
        for (let j = k; j < k + STEP_CYCLE; j++) stepRelease(w, j).forEach((r, s) => (sums[s]! += r));
        sums.forEach((sum, s) => expect(sum, `${limit}/${reach}/${floor} step ${k} stripe ${s}`).toBeLessThanOrEqual(share(reach, s) - share(floor, s)));
        expect(stepRelease(w, k).reduce((a, b) => a + b, 0)).toBe(stepPortion(reach - floor));
      }
    }
  });

  it("reads a step's room and when it frees from the stripes as stored", () => {
    // 20 an hour, one stripe per slot: keyless reach 16, open 12. Step 1000 releases slot 12 + 1000 % 4 = 12.
    const w = withSteps(withReach(cityWindow("gate-admissions", 20, 3600), 16), 12);
    const now = new Date(1000 * STEP_MS + 60_000);
    const row = (s: number, counts: number[]) => ({
      subject: `city/${s}`,
      bucket: 1000,
      bucket_ms: STEP_MS,
      counts: [...counts, ...new Array<number>(13 - counts.length).fill(0)],
    });
    // The open share taken a step ago, nothing this step: one bid slot (stripe 12's) is left.
    const open = Array.from({ length: 20 }, (_, s) => row(s, s < 12 ? [0, 1] : [0, 0]));
    expect(stripesRoom(open, w, now)).toBe(1);
    expect(stripesRoom(open, withReach(cityWindow("gate-admissions", 20, 3600), 12), now)).toBe(0);
    // Stripe 12 took it this step: none left; the next step (1001, stripe 13's slot) opens in 240 s.
    const taken = open.map((r, s) => (s === 12 ? row(s, [1, 0]) : r));
    expect(stripesRoom(taken, w, now)).toBe(0);
    expect(stripesRetryAfter(taken, w, now)).toBe(240);
    // Unstepped, the same stripes have room now (stripes 13..15).
    expect(stripesRoom(taken, { ...w, steps: undefined }, now)).toBe(3);
    // The whole keyless reach counted a step ago (stripes 12..15 too): it frees when those counts leave, 12 steps on.
    const full = open.map((r, s) => (s >= 12 && s < 16 ? row(s, [0, 1]) : r));
    expect(stripesRoom(full, w, now)).toBe(0);
    expect(stripesRetryAfter(full, w, now)).toBe(11 * 300 + 240);
  });
});

describeOnDatabases("keyless bids served in steps (fair under flood)", (t) => {
  beforeAll(() => useDatabase(t().db));
  beforeEach(async () => {
    await t().raw("DELETE FROM rate_windows");
  }, 120_000);

  // 120 an hour, no reserve: 120 without a key, of which 90 (the open share) without a bid; the
  // bids' part is 30, 2 a step (stepPortion). No share per network (the presentations have no address).
  const limits: GateLimits = { perOriginPerHour: 100_000, perAddressPerHour: 0, admissionsPerHour: 120, prefixSharePercent: 100, reservePercent: 0 };
  const window = cityWindow("gate-admissions", 120, 3600);
  // Every moment of a test is its own: a step's start plus a minute, and the next step's.
  const step = Math.floor(Date.now() / STEP_MS);
  const now = new Date(step * STEP_MS + 60_000);
  const later = new Date((step + 1) * STEP_MS + 1_000);
  const c = (at: Date, extra: Partial<GateCircumstances> = {}): GateCircumstances => gateCircumstances(limits, { now: at, ...extra });
  const present = (p: Record<string, unknown>, circumstances: GateCircumstances): Promise<Verdict> => presentDirect(t().db, p, circumstances);
  const bidding = (at: Date, effort: number) => biddingPresentation(t().db, effort, {}, at);
  const counted = () => admissionsCounted(t().db);
  // What an honest client solves at (docs/pow.md): the effort suggested now, at least the least ever
  // asked. The rule under test is the steps, not the work: no margin above it (each bit doubles the CPU).
  const asked = async (l: GateLimits, at: Date) => Math.max(POW_BASE_EFFORT, await readSuggestedEffort(t().db, l, at));
  /** The open share (90) taken a step before `now`, as a flood without bids leaves the stripes. */
  const openShareTaken = async () => {
    const n = window.stripes!;
    for (let s = 0; s < n; s++) {
      const share = Math.floor(90 / n) + (s < 90 % n ? 1 : 0);
      const counts = `{${[0, share, ...new Array<number>(11).fill(0)].join(",")}}`;
      await t().db.execute(sql`INSERT INTO rate_windows (scope, subject, bucket, bucket_ms, counts, expires_at, allowed)
        VALUES ('gate-admissions', ${`city/${s}`}, ${bucketOf(window, now)}, ${bucketMs(window)}, ${counts}::int[], 'infinity', true)`);
    }
    expect(await counted()).toBe(90);
  };

  it("serves a step's portion of bids, tells the next bid when the next step opens, and serves bids again then", async () => {
    await openShareTaken();
    expect(stepPortion(30)).toBe(2);
    // Without a bid: filtered, a bid is served (the suggested effort).
    const effort = await readSuggestedEffort(t().db, limits, now);
    expect(effort).toBeGreaterThan(0);
    expect(await present(presentation(), c(now))).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: effort });
    // GET /gate's pow.step: 2 a step, 2 left.
    expect(bidStep(await readCeilingStripes(t().db, limits, now), limits, now)).toEqual({
      seconds: 300,
      portion: 2,
      left: 2,
      next_at: new Date((step + 1) * STEP_MS).toISOString(),
    });
    // The step's two bids are admitted, one after another.
    for (let i = 0; i < 2; i++) {
      const bid = await present(await bidding(now, await asked(limits, now)), c(now));
      expect(bid.verdict, JSON.stringify(bid)).toBe("admitted");
    }
    expect(await counted()).toBe(92);
    expect(bidStep(await readCeilingStripes(t().db, limits, now), limits, now)!.left).toBe(0);
    // A third bid of this step is refused: told so, retry at the next step (240 s), and the effort it asks.
    const third = (await present(await bidding(now, await asked(limits, now)), c(now))) as Verdict & {
      reason: string;
      retry_after_seconds: number;
      suggested_effort: number;
    };
    expect(third).toMatchObject({ verdict: "filtered", rule: "flood", retry_after_seconds: 240 });
    expect(third.reason).toContain(`Bids for this step are taken; the next step opens at ${new Date((step + 1) * STEP_MS).toISOString()}`);
    expect(third.suggested_effort).toBeGreaterThanOrEqual(effort);
    expect(third.suggested_effort).toBeLessThanOrEqual(22);
    // Without a bid now: the same (no bid is served in this step).
    expect(await present(presentation(), c(now))).toMatchObject({ verdict: "filtered", rule: "flood", retry_after_seconds: 240 });
    expect(await counted()).toBe(92);
    // A newcomer's signature is a bid served in steps as well: refused; a settled citizen's is not stepped.
    expect(await present(presentation(), c(now, await signedBySponsor(t().db, 1)))).toMatchObject({
      verdict: "filtered",
      rule: "flood",
      retry_after_seconds: 240,
    });
    expect((await present(presentation(), c(now, await signedBySponsor(t().db)))).verdict).toBe("admitted");
    expect(await counted()).toBe(93);
    // The next step serves bids again, at the effort it asks.
    const next = await present(await bidding(later, await asked(limits, later)), c(later));
    expect(next.verdict, JSON.stringify(next)).toBe("admitted");
    expect(await counted()).toBe(94);
  }, 120_000);

  it("never serves more than the step's portion to bids presented in parallel", async () => {
    await openShareTaken();
    const effort = await asked(limits, now);
    const bids = await Promise.all(Array.from({ length: 8 }, () => bidding(now, effort)));
    const answers = await Promise.all(bids.map((p) => present(p, c(now))));
    const admitted = answers.filter((a) => a.verdict === "admitted").length;
    expect(admitted, JSON.stringify(answers)).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(2);
    // Each was a bid at the effort asked: none refused for want of one (solved at the least effort that counts).
    for (const a of answers) if (a.verdict !== "admitted") expect((a as { reason: string }).reason).not.toMatch(/^Presentations without a bid/);
    expect(await counted()).toBe(90 + admitted);
    // What is left of the step is taken one after another, and no more.
    for (let i = admitted; i < 4; i++) await present(await bidding(now, await asked(limits, now)), c(now));
    expect(await counted()).toBe(92);
    expect(stripesRoom(await readCeilingStripes(t().db, limits, now), steppedBidWindow(limits)!, now)).toBe(0);
  }, 120_000);

  it("serves one network at most its share of a step's bids (half of 2 here: 1), its last octet rotated or not; another network's bid is served in the same step", async () => {
    await openShareTaken();
    const shared = { ...limits, prefixSharePercent: 50 };
    const at = (ip: string, extra: Partial<GateCircumstances> = {}) => gateCircumstances(shared, { now, ip, ...extra });
    const effort = await asked(shared, now);
    expect((await present(await bidding(now, effort), at("10.1.1.7"))).verdict).toBe("admitted");
    // The same /24 again, another address, a bid of the effort asked: refused by its network's share of the step.
    const again = (await present(await bidding(now, effort), at("10.1.1.8"))) as Verdict & { reason: string; retry_after_seconds: number };
    expect(again).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(again.reason).toMatch(/^Your network \(10\.1\.1\.0\/24\) had its share of the bids served in steps: 1 every 300 s/);
    expect(again).not.toHaveProperty("suggested_effort");
    // A sliding window of one step's length, counted in buckets of a twelfth of it: free again at most 300 + 25 s on.
    expect(again.retry_after_seconds).toBeLessThanOrEqual(325);
    // A newcomer's signature from that /24 is a stepped bid too: refused the same way.
    expect(await present(presentation(), at("10.1.1.9", await signedBySponsor(t().db, 1)))).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(await counted()).toBe(91);
    // Another /24's bid: the step's second slot.
    expect((await present(await bidding(now, effort), at("10.2.2.7"))).verdict).toBe("admitted");
    expect(await counted()).toBe(92);
    // A settled citizen's signature from the first /24 is not a stepped bid: its network's step share does not apply.
    expect((await present(presentation(), at("10.1.1.10", await signedBySponsor(t().db)))).verdict).toBe("admitted");
  }, 120_000);
});
