import { expect, it } from "vitest";
import { solveGatePuzzle } from "@/lib/sign-request";
import { awayFromStepTurn, presentation } from "../../support/gate";
import { type Answer, describeOnServer, usePostgresCity } from "../../support/postgres-city";

/*
 * CITY-POW/1 through `next start` on PostgreSQL (issue 43, docs/pow.md): past the admissions
 * ceiling's open share a presentation without a bid is filtered with the suggested effort (body and
 * City-Pow-Effort header), GET /gate and /api/capabilities publish the same effort, and a client
 * that solves the puzzle with the signing helper (solveGatePuzzle) is admitted.
 */

describeOnServer("the gate's proof-of-work bid through next start", () => {
  // 8 admissions an hour, 20% kept for presentations settled citizens sign: 6 for the rest, 4 of them (the open share) without a bid.
  const city = usePostgresCity("gate-pow", { CITY_GATE_ADMISSIONS_PER_HOUR: "8", CITY_GATE_RESERVE_PERCENT: "20" });
  const present = (body: Record<string, unknown>): Promise<Answer> =>
    city().call("/gate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("asks no work below the open share, then filters a bare presentation with the effort and admits one that solves it", async () => {
    // The step's portion is taken below and then said to be: no step may open between.
    await awayFromStepTurn({ perOriginPerHour: 1, perAddressPerHour: 0, admissionsPerHour: 8, reservePercent: 20 });
    const before = await city().count("citizens");
    const idle = await city().get("/gate");
    expect(idle.status).toBe(200);
    expect(idle.body.pow).toMatchObject({ protocol: "CITY-POW/1", suggested_effort: 0, max_effort: 22, field: "pow_solution", header: "City-Pow-Effort" });
    expect(idle.headers.get("city-pow-effort")).toBe("0");
    for (let i = 0; i < 4; i++) expect((await present(presentation())).body.verdict).toBe("admitted");

    const refused = await present(presentation());
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: expect.any(Number) });
    const effort = refused.body.suggested_effort as number;
    expect(effort).toBeGreaterThanOrEqual(12);
    expect(refused.headers.get("city-pow-effort")).toBe(String(effort));

    const gate = await city().get("/gate");
    expect(gate.body.pow.suggested_effort).toBe(effort);
    expect(gate.headers.get("city-pow-effort")).toBe(String(effort));
    expect((await city().get("/api/capabilities")).body.pow).toMatchObject({ protocol: "CITY-POW/1", suggested_effort: effort });
    // The keyless bids' step (docs/pow.md): of the bids' part (2), one a step of 300 s, none taken yet.
    expect(gate.body.pow.step).toMatchObject({ seconds: 300, portion: 1, left: 1, next_at: expect.any(String) });
    expect((await city().get("/api/capabilities")).body.pow.step).toMatchObject({ seconds: 300, portion: 1 });

    // A malformed solution is a 400 problem, and changes nothing.
    const bad = await present({ ...presentation(), nonce: gate.body.nonce, pow_solution: "xyz" });
    expect(bad.status).toBe(400);
    expect(bad.type).toMatch(/application\/problem\+json/);

    // The client: a fresh nonce, the effort it names, the helper's solution.
    const fresh = await city().get("/gate");
    const p = { ...presentation(), nonce: fresh.body.nonce as string };
    const pow_solution = await solveGatePuzzle({ nonce: p.nonce, name: p.name, origin: p.origin, effort: fresh.body.pow.suggested_effort });
    const admitted = await present({ ...p, pow_solution });
    expect(admitted.body.verdict, JSON.stringify(admitted.body)).toBe("admitted");
    expect(await city().count("citizens")).toBe(before + 5);
    // The step's portion is taken: GET /gate says none is left, and a bare presentation is told when the next step opens.
    const after = await city().get("/gate");
    const told = await present(presentation());
    if (after.body.pow.step.next_at === fresh.body.pow.step.next_at) {
      expect(after.body.pow.step.left).toBe(0);
      expect(told.body).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: expect.any(Number) });
      expect(told.body.reason).toContain(`Bids for this step are taken; the next step opens at ${after.body.pow.step.next_at}`);
      expect(told.body.retry_after_seconds).toBeLessThanOrEqual(300);
    }
  }, 180_000);
});
