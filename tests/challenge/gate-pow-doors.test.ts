import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { describeGate, presentGate } from "@/lib/doors/declarations/gate/gate";
import { readCapabilities } from "@/lib/doors/declarations/restriction/tiers";
import { describeOnDatabases } from "../support/databases";
import { callDoor, presentation } from "../support/gate";

// 8 admissions an hour, a fifth kept for presentations settled citizens sign: 6 for the rest, 4 of them without a bid.
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "8";
process.env.CITY_GATE_RESERVE_PERCENT = "20";
process.env.CITY_GATE_PREFIX_SHARE_PERCENT = "100";
// Two presentations and two nonces per address an hour.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "2";

/*
 * CITY-POW/1 through the doors' HTTP adapter (docs/pow.md, "Where it is published"): GET /gate's
 * pow block and City-Pow-Effort header, the same effort in /api/capabilities, in the ceiling's
 * refusal (body and header) and in GET /gate's 429 over the nonce quota; none in a refusal a bid
 * cannot lift; a malformed pow_solution is a 400 problem.
 */

describeOnDatabases("the gate publishes the suggested proof-of-work effort", (t) => {
  beforeAll(async () => {
    useDatabase(t().db);
    await t().raw("UPDATE rate_windows SET counts = array_fill(0, ARRAY[cardinality(counts)]) WHERE scope = 'gate-admissions'");
  }, 120_000);

  it("publishes effort 0 when idle, then the effort past the open share everywhere a bid would help, and none where it would not", async () => {
    const idle = await callDoor(describeGate, { ip: "10.200.0.1" });
    expect(idle.status).toBe(200);
    expect(idle.body.pow).toMatchObject({ protocol: "CITY-POW/1", suggested_effort: 0, max_effort: 22, field: "pow_solution", header: "City-Pow-Effort" });
    expect(idle.headers.get("City-Pow-Effort")).toBe("0");
    expect((await callDoor(readCapabilities)).body.pow).toMatchObject({ suggested_effort: 0 });

    const malformed = await callDoor(presentGate, { body: { ...presentation(), pow_solution: "ABCDEF0123456789" }, ip: "10.201.0.1" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: "pow_solution" })]));

    for (let i = 0; i < 4; i++) expect((await callDoor(presentGate, { body: presentation(), ip: `10.${i}.0.1` })).body.verdict).toBe("admitted");
    const refused = await callDoor(presentGate, { body: presentation(), ip: "10.9.0.1" });
    expect(refused.body).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: expect.any(Number) });
    const effort = refused.body.suggested_effort as number;
    expect(effort).toBeGreaterThanOrEqual(12);
    expect(refused.headers.get("City-Pow-Effort")).toBe(String(effort));

    const gate = await callDoor(describeGate, { ip: "10.202.0.1" });
    expect(gate.body.pow.suggested_effort).toBe(effort);
    expect(gate.headers.get("City-Pow-Effort")).toBe(String(effort));
    expect((await callDoor(readCapabilities)).body.pow).toMatchObject({ protocol: "CITY-POW/1", suggested_effort: effort });

    // GET /gate over the address's nonce quota: the 429 says the effort too.
    await callDoor(describeGate, { ip: "10.202.0.1" });
    const over = await callDoor(describeGate, { ip: "10.202.0.1" });
    expect(over.status).toBe(429);
    expect(over.body.suggested_effort).toBe(effort);
    expect(over.headers.get("City-Pow-Effort")).toBe(String(effort));

    // The address's own window (two an hour): a bid would not lift it, so no effort is said.
    for (let i = 0; i < 2; i++) await callDoor(presentGate, { body: presentation({ ask: "look" }), ip: "10.203.0.1" });
    const own = await callDoor(presentGate, { body: presentation({ ask: "look" }), ip: "10.203.0.1" });
    expect(own.body).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(own.body.reason).toMatch(/from this address/);
    expect(own.body).not.toHaveProperty("suggested_effort");
    expect(own.headers.get("City-Pow-Effort")).toBeNull();
  }, 120_000);
});
