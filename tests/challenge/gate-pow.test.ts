import { beforeAll, beforeEach, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { issueNonce, offerNonce, ceilingWindow, effortFromStripes, solutionEffort, solvePow } from "@/lib/city/challenge";
import { readSuggestedEffort } from "@/lib/city/challenge/gate-pow";
import type { GateCircumstances, GateLimits, Verdict } from "@/lib/city/challenge";
import { POW_BASE_EFFORT } from "@/lib/city/challenge/pow-effort";
import { describeOnDatabases } from "../support/databases";
import { admissionsCounted, biddingPresentation, gateCircumstances, presentation, presentDirect, signedBySponsor, useGateClock } from "../support/gate";

/*
 * CITY-POW/1 wired at the gate (issue 43, docs/pow.md), on the domain functions (PGlite, and pg where
 * TEST_DATABASE_URL is set): below the admissions ceiling's open share nobody is asked for work;
 * past it a presentation without a bid is filtered with the suggested effort, a solution of that
 * effort for this nonce, name and origin is admitted, anything less is not; bids never pass what
 * the reserve leaves, in parallel either.
 */

describeOnDatabases("the gate's proof-of-work bid (CITY-POW/1)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const clock = useGateClock();
  beforeEach(async () => {
    await t().raw("DELETE FROM rate_windows WHERE scope <> 'gate-admissions'");
    await t().raw("UPDATE rate_windows SET counts = array_fill(0, ARRAY[cardinality(counts)]) WHERE scope = 'gate-admissions'");
  }, 120_000);

  // A ceiling of 20 an hour, 20% kept for presentations settled citizens sign: 16 for the rest, of which
  // 12 (three quarters) without a bid; bids take the other 4, in steps. No share per network (each
  // presentation has no address).
  const limits: GateLimits = { perOriginPerHour: 100_000, perAddressPerHour: 0, admissionsPerHour: 20, prefixSharePercent: 100, reservePercent: 20 };
  const c = (extra: Partial<GateCircumstances> = {}): GateCircumstances => gateCircumstances(limits, { now: clock.now(), ...extra });
  const present = (p: Record<string, unknown>, circumstances: GateCircumstances = c()): Promise<Verdict> => presentDirect(t().db, p, circumstances);
  const nonce = async (at = clock.now()) => (await issueNonce(t().db, at, null, 0)).nonce;
  const effortNow = (at = clock.now()) => readSuggestedEffort(t().db, limits, at);
  const bidding = (effort: number, overrides: Record<string, unknown> = {}, at = clock.now()) => biddingPresentation(t().db, effort, overrides, at);
  const counted = () => admissionsCounted(t().db);
  /** Fills the ceiling with presentations without a bid up to its open share (12). */
  const fillOpenShare = async () => {
    for (let i = 0; i < 12; i++) expect((await present(presentation())).verdict).toBe("admitted");
  };

  it("asks no work below the open share: effort 0, and presentations without a solution are admitted", async () => {
    for (let i = 0; i < 11; i++) {
      expect(await effortNow()).toBe(0);
      expect((await present(presentation(i % 3 ? {} : { ask: "ward" }))).verdict).not.toBe("filtered");
    }
    expect(await effortNow()).toBe(0);
    // GET /gate's statement reads the same stripes: effort 0 there too.
    const offered = await offerNonce(t().db, new Date(), { ip: null, perAddressPerHour: 0, ceiling: ceilingWindow(limits) });
    expect(effortFromStripes(offered.ceilingStripes, limits, new Date())).toBe(0);
    // A junk solution below the open share is no bid and needs none.
    expect((await present({ ...presentation({ nonce: await nonce() }), pow_solution: "0000000000000000" })).verdict).toBe("admitted");
    expect(await counted()).toBe(12);
  }, 120_000);

  it("past the open share filters a presentation without a bid with the suggested effort, and admits a solution of that effort", async () => {
    await fillOpenShare();
    const effort = await effortNow();
    expect(effort).toBeGreaterThanOrEqual(POW_BASE_EFFORT);
    const offered = await offerNonce(t().db, new Date(), { ip: null, perAddressPerHour: 0, ceiling: ceilingWindow(limits) });
    expect(effortFromStripes(offered.ceilingStripes, limits, new Date())).toBe(effort);
    const bare = await present(presentation());
    expect(bare).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: effort, retry_after_seconds: expect.any(Number) });
    expect((bare as { reason: string }).reason).toMatch(/pow_solution of at least \d+ leading zero bits/);
    // A ward request is served from the same ceiling: without a bid it is filtered too.
    expect(await present(presentation({ ask: "ward" }))).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: effort });
    expect(await counted()).toBe(12);
    const bid = await present(await bidding(effort));
    expect(bid.verdict, JSON.stringify(bid)).toBe("admitted");
    expect(await counted()).toBe(13);
    // The price climbed with what is left.
    expect(await effortNow()).toBeGreaterThan(effort);
  }, 120_000);

  it("filters an insufficient solution, one under the base effort, and one for another name, origin or nonce; a replayed nonce meets rule nonce", async () => {
    await fillOpenShare();
    // One bid taken: the price is now above the base effort. Bids past the open share are served in
    // steps (a step's portion here: one), so the rest is presented in the next step (gate-pow-steps.test.ts).
    expect((await present(await bidding(await effortNow()))).verdict).toBe("admitted");
    const at = new Date((Math.floor(Date.now() / 300_000) + 1) * 300_000 + 1_000);
    const later = c({ now: at });
    const effort = await effortNow(at);
    expect(effort).toBeGreaterThan(POW_BASE_EFFORT);
    // A solution of at least the base effort but under the price (searched until one falls short).
    const p = { ...presentation(), nonce: await nonce(at) };
    const binding = { nonce: p.nonce, name: p.name, origin: p.origin };
    let start = 0;
    let short: string | null = null;
    while (!short) {
      const found = solvePow(binding, POW_BASE_EFFORT, start)!;
      if (solutionEffort(binding, found.solution) < effort) short = found.solution;
      start += found.tries;
    }
    expect(await present({ ...p, pow_solution: short }, later)).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: effort });
    // Under the base effort.
    const weak = { ...presentation(), nonce: await nonce(at) };
    let solution = "0000000000000000";
    for (let n = 1; solutionEffort({ nonce: weak.nonce, name: weak.name, origin: weak.origin }, solution) >= POW_BASE_EFFORT; n++)
      solution = n.toString(16).padStart(16, "0");
    expect(await present({ ...weak, pow_solution: solution }, later)).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: effort });
    // A valid solution, but for another presentation: another name, another origin, another nonce.
    const good = await bidding(effort, {}, at);
    expect(await present({ ...good, name: `${good.name}x` }, later)).toMatchObject({ verdict: "filtered", rule: "flood" });
    const other = await bidding(effort, {}, at);
    expect(await present({ ...other, origin: "elsewhere.example" }, later)).toMatchObject({ verdict: "filtered", rule: "flood" });
    const moved = await bidding(effort, {}, at);
    expect(await present({ ...moved, nonce: await nonce(at) }, later)).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(await counted()).toBe(13);
    // The right one is admitted once; its nonce replayed is refused.
    const right = await bidding(effort, {}, at);
    expect((await present(right, later)).verdict).toBe("admitted");
    expect(await present({ ...right, name: `${right.name}-again` }, later)).toMatchObject({ verdict: "filtered", rule: "nonce" });
    expect(await present(right, later)).toMatchObject({ verdict: "filtered", rule: "nonce" });
  }, 120_000);

  it("serves a settled citizen's signature without work up to the whole ceiling, a newcomer's and bids of work only in steps, never past what the reserve leaves", async () => {
    // One step's portion is taken below and the next bid expected refused: no step may open between.
    clock.clearOfStepTurn(limits);
    await fillOpenShare();
    // A newcomer's signature: a bid that needs no work, served from this step's portion (one here).
    expect((await present(presentation(), c(await signedBySponsor(t().db, 1)))).verdict).toBe("admitted");
    // The step's portion is taken: a bid of work, and another newcomer's signature, are refused.
    const effort = await effortNow();
    expect(await present(await bidding(Math.max(effort, 16)))).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(await present(presentation(), c(await signedBySponsor(t().db, 1)))).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(await counted()).toBe(13);
    // Settled citizens' signatures in parallel (transactions at once on pg), more than the 7 slots left:
    // not stepped, and the reserve is theirs; never past the ceiling.
    const sponsors = await Promise.all(Array.from({ length: 9 }, () => signedBySponsor(t().db)));
    const answers = await Promise.all(sponsors.map((s) => present(presentation(), c(s))));
    const admitted = answers.filter((a) => a.verdict === "admitted").length;
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(7);
    expect(await counted()).toBeLessThanOrEqual(20);
    // One after another (a stripe raced may refuse with room) they fill the ceiling, and no further.
    for (let i = 0; i < 9; i++) await present(presentation(), c(await signedBySponsor(t().db)));
    expect(await counted()).toBe(20);
    const over = await present(presentation(), c(await signedBySponsor(t().db)));
    expect(over).toMatchObject({ verdict: "filtered", rule: "flood" });
    // A bid cannot lift it: no effort is said.
    expect(over).not.toHaveProperty("suggested_effort");
  }, 120_000);
});
