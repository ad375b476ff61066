import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { readAndFileWard } from "@/lib/doors/declarations/ward/ward";
import { describeOnDatabases } from "../support/databases";
import { callDoor, presentation } from "../support/gate";

/*
 * Issue 43, item 7: every refusal says why, when to retry, and at what effort. Refusals that are
 * verdicts (HTTP 200: the gate's flood filter, an unsigned ward note read but not filed) say when
 * to try again both in the answer (retry_after_seconds) and in Retry-After, as a 429 problem does;
 * an unsigned note refused by its network's share says so, not that its address filed too many.
 */
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "2";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";
// Each address's own bound out of the way: only the network's share of unsigned notes binds (5 % of 120: 6).
process.env.CITY_WARD_PER_ADDRESS_PER_HOUR = "100";
process.env.CITY_WARD_UNSIGNED_PER_HOUR = "120";

describeOnDatabases("refusals say why and when to retry (issue 43, item 7)", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("the gate's flood filter says when to present again in the verdict and in Retry-After", async () => {
    const ip = "192.0.2.10";
    for (let i = 0; i < 2; i++) {
      const look = await callDoor(presentGate, { ip, body: presentation({ kind: "human", ask: "look" }) });
      expect(look.body.verdict, JSON.stringify(look.body)).toBe("observer");
    }
    const refused = await callDoor(presentGate, { ip, body: presentation({ kind: "human", ask: "look" }) });
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(refused.body.reason).toMatch(/presentations from this address in an hour/);
    const retry = refused.body.retry_after_seconds as number;
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(3900);
    expect(refused.headers.get("retry-after")).toBe(String(retry));
    // No bid lifts an address's own window: no effort is said.
    expect(refused.body).not.toHaveProperty("suggested_effort");
    expect(refused.headers.get("city-pow-effort")).toBeNull();
    // A verdict that is no refusal carries no Retry-After.
    expect((await callDoor(presentGate, { ip: "192.0.2.11", body: presentation({ kind: "human", ask: "look" }) })).headers.get("retry-after")).toBeNull();
  });

  it("an unsigned note past its network's share is read, not filed: it names the network's share and says when to file again", async () => {
    const note = (i: number) => ({ state: `I keep retrying the same call (${i})`, note: "a note to file" });
    // Six addresses of one /24 file its 6; the seventh, from a seventh address, is refused by the network's share.
    for (let i = 1; i <= 6; i++) {
      const filed = await callDoor(readAndFileWard, { ip: `203.0.113.${i}`, body: note(i) });
      expect(filed.body.filed, JSON.stringify(filed.body)).toBe(true);
    }
    const refused = await callDoor(readAndFileWard, { ip: "203.0.113.7", body: note(7) });
    expect(refused.status).toBe(200);
    expect(refused.body.filed).toBe(false);
    expect(refused.body.note).toMatch(/your network \(its IPv4 \/24 or IPv6 \/48\) has filed its share of the city's unsigned notes, 6 an hour/);
    expect(refused.body.note).not.toMatch(/this client address/);
    const retry = refused.body.retry_after_seconds as number;
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(3900);
    expect(refused.headers.get("retry-after")).toBe(String(retry));
    // Another network files; a filed note carries no Retry-After.
    const elsewhere = await callDoor(readAndFileWard, { ip: "198.18.0.1", body: note(8) });
    expect(elsewhere.body.filed).toBe(true);
    expect(elsewhere.body).not.toHaveProperty("retry_after_seconds");
    expect(elsewhere.headers.get("retry-after")).toBeNull();
  });
});
