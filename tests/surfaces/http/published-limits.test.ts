import { describe, expect, it } from "vitest";
import { describeOnServer, usePostgresCity } from "../../support/postgres-city";

/*
 * The built server started with a deployment's own limits (the harness turns the per-address gate
 * bound off and raises the per-origin one; this file also turns the admissions ceiling and the
 * ward's per-address bound off and lowers the city-wide locker bound): what /openapi.json, /llms.txt
 * and the card publish is what is in force, never the defaults.
 */
describeOnServer("the built server publishes the limits in force", () => {
  const city = usePostgresCity("published-limits", {
    CITY_GATE_ADMISSIONS_PER_HOUR: "0",
    CITY_WARD_PER_ADDRESS_PER_HOUR: "0",
    CITY_LOCKER_CITY_BYTES: "5000000",
    CITY_STORE_VAULT_BYTES: "7777777",
    CITY_STORE_NEWCOMER_PERCENT: "10",
    CITY_STORE_NETWORK_PERCENT: "30",
  });

  it("in OpenAPI, llms.txt and the city card", async () => {
    const openapi = await city().get("/openapi.json");
    expect(openapi.status).toBe(200);
    const gate = openapi.body.paths["/gate"].post["x-city-limits"] as { name: string; limit: number; per: string }[];
    // The per-origin bound as raised, the city-wide bound on counted addresses and origins (issue 29,
    // item 8), then the ward store's city-wide bounds (a ward request is kept there; item 1).
    expect(gate.map((l) => [l.name, l.limit])).toEqual([
      ["presentations", 100000],
      ["counted_subjects", 20000],
      ["city_ward_bytes", 268_435_456],
      ["city_ward_bytes_per_hour", 8_388_608],
      ["city_ward_newcomer_bytes_per_hour", 838_860],
      // Issue 43: what newcomers and visitors may fill of the total (the reserve keeps a fifth), one source's share of the hour, one citizen's own total.
      ["city_ward_newcomer_bytes", 214_748_364],
      ["city_ward_subject_bytes_per_hour", 41_943],
      // One network's citizens together: 30 % of the hour, as configured here.
      ["city_ward_network_bytes_per_hour", 2_516_582],
      ["city_ward_citizen_bytes", 268_435],
    ]);
    expect(openapi.body.paths["/api/vault"].post["x-city-limits"]).toContainEqual(
      expect.objectContaining({ name: "city_vault_bytes", limit: 7_777_777, over: "refused" }),
    );
    // No per-address nonce bound (off in the harness), and no city-wide one left (issue 42: a nonce is no row).
    expect(openapi.body.paths["/gate"].get["x-city-limits"] ?? []).toEqual([]);
    expect(openapi.body.paths["/api/hospital"].post["x-city-limits"].map((l: { name: string }) => l.name)).not.toContain("unsigned_filings");
    expect(openapi.body.paths["/api/locker"].post["x-city-limits"]).toContainEqual({ name: "city_bytes", limit: 5_000_000, per: "city", over: "refused" });

    const llms = await city().call("/llms.txt");
    expect(llms.status).toBe(200);
    const text = JSON.stringify(llms.body);
    expect(text).not.toContain("per client address (env CITY_GATE_PER_ADDRESS_PER_HOUR");
    expect(text).not.toContain("30 gate nonces");
    expect(text).not.toContain("600 admissions");
    expect(text).not.toContain("2147483648 city_bytes");
    expect(text).toContain("5000000 city_bytes per city");
    expect(text).not.toContain("gate_nonces_live");
    expect(text).toContain("20000 counted_subjects per city");
    expect(text).toContain("7777777 city_vault_bytes per city");

    const card = await city().get("/city-card.json");
    expect(card.status).toBe(200);
    expect(card.body.limits.locker.bytesCityWide).toBe(5_000_000);
    expect(card.body.limits.doors["present-at-gate"]).toEqual(gate);
    expect(card.body.limits.clinic).toMatchObject({ citizenPerDay: 3, provenPerDay: 12, cityCeiling: 60, newcomerShare: 40 });
    expect(card.body.limits.stores.vault).toMatchObject({ bytes: 7_777_777, bytes_per_hour: 33_554_432, newcomer_bytes_per_hour: 3_355_443 });

    // The capabilities' gauges, as counted on this database, with the bounds in force.
    const caps = await city().get("/api/capabilities");
    expect(caps.status).toBe(200);
    expect(caps.body.stores.newcomer_percent).toBe(10);
    expect(caps.body.stores.gauges.vault).toMatchObject({ bound_bytes: 7_777_777, counted: true });
    expect(caps.body.stores.gauges.vault.bytes).toBeGreaterThanOrEqual(0);
  });
});
