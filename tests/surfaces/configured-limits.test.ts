import { describe, expect, it } from "vitest";
import { buildAgentCard } from "@/lib/doors/surfaces/a2a-card";
import { cardLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { buildLlmsTxt } from "@/lib/doors/surfaces/llms";
import { buildOpenApi } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";

/*
 * Every published limit is the one in force. This file runs with a deployment's own configuration
 * (read lazily, so it is in place before anything reads it): limits turned off, one lowered, one
 * raised. The generators of OpenAPI, llms.txt, the A2A card and the city card must publish those
 * numbers, and never the defaults.
 */
Object.assign(process.env, {
  CITY_GATE_PER_ADDRESS_PER_HOUR: "0",
  CITY_GATE_ADMISSIONS_PER_HOUR: "0",
  CITY_GATE_PER_ORIGIN_PER_HOUR: "7",
  CITY_WARD_PER_ADDRESS_PER_HOUR: "0",
  CITY_LOCKER_CITY_BYTES: "1000000",
  CITY_STORE_VAULT_BYTES: "123456",
  CITY_STORE_WARD_BYTES_PER_HOUR: "40000",
  CITY_STORE_NEWCOMER_PERCENT: "10",
});

const BASE = "https://city.example";
type Limit = { name: string; limit: number; per: string };
const openApiLimits = (doorName: string): Limit[] => {
  const paths = buildOpenApi(registry, BASE).paths as Record<string, Record<string, { operationId: string; "x-city-limits"?: Limit[] }>>;
  const op = Object.values(paths)
    .flatMap((p) => Object.values(p))
    .find((o) => o.operationId === doorName);
  expect(op, doorName).toBeDefined();
  return op!["x-city-limits"] ?? [];
};

describe("published limits under a non-default configuration", () => {
  it("OpenAPI publishes no per-address gate bound when it is off, and the configured origin bound", () => {
    const gate = openApiLimits("present-at-gate");
    expect(gate.filter((l) => l.per.includes("client address"))).toEqual([]);
    expect(gate.filter((l) => l.name === "admissions")).toEqual([]);
    expect(gate.find((l) => l.per.startsWith("origin"))).toMatchObject({ limit: 7, window_seconds: 3600 });
    // The per-address nonce quota is off, and no city-wide nonce bound is left (issue 42: a nonce is no row).
    expect(openApiLimits("describe-gate")).toEqual([]);
    expect(openApiLimits("seek-hospital").filter((l) => l.name === "unsigned_filings")).toEqual([]);
    expect(openApiLimits("keep-locker").find((l) => l.name === "city_bytes")).toMatchObject({ limit: 1_000_000 });
  });

  it("llms.txt and the A2A card name neither the default 30 per client address nor the defaults 20, 600 and 2147483648", () => {
    const llms = buildLlmsTxt(registry, BASE);
    const skills = JSON.stringify(buildAgentCard(registry, BASE, "test", "0").skills);
    for (const text of [llms, skills]) {
      expect(text).not.toMatch(/\d+ presentations per 3600 s per client address/);
      expect(text).not.toContain("30 gate nonces");
      expect(text).not.toContain("20 presentations");
      expect(text).not.toContain("600 admissions");
      expect(text).not.toContain("2147483648 city_bytes");
      expect(text).toContain("7 presentations per 3600 s per origin");
      expect(text).toContain("1000000 city_bytes per city");
    }
  });

  it("every door that adds to a store publishes its city-wide bounds as configured, in OpenAPI, llms.txt and the card", () => {
    expect(
      openApiLimits("write-vault")
        .filter((l) => l.name.startsWith("city_vault_"))
        .map((l) => [l.name, l.limit]),
    ).toEqual([
      ["city_vault_bytes", 123_456],
      ["city_vault_bytes_per_hour", 33_554_432],
      ["city_vault_newcomer_bytes_per_hour", 3_355_443],
      // Issue 43: the newcomers' reach of the total (a fifth reserved), one source's hourly share, one citizen's own total.
      ["city_vault_newcomer_bytes", 98_764],
      ["city_vault_subject_bytes_per_hour", 167_772],
      // One network's citizens together: a tenth of the hour.
      ["city_vault_network_bytes_per_hour", 3_355_443],
      ["city_vault_citizen_bytes", 123],
    ]);
    expect(openApiLimits("seek-hospital").find((l) => l.name === "city_ward_newcomer_bytes_per_hour")).toMatchObject({ limit: 4_000, window_seconds: 3600 });
    expect(buildLlmsTxt(registry, BASE)).toContain("123456 city_vault_bytes per city");
    const card = cardLimits(registry);
    expect(card.stores.vault).toMatchObject({ bytes: 123_456, bytes_per_hour: 33_554_432, newcomer_bytes_per_hour: 3_355_443 });
    expect(card.stores.ward).toMatchObject({ bytes_per_hour: 40_000, newcomer_bytes_per_hour: 4_000 });
    expect(Object.keys(card.stores).sort()).toEqual([
      "a2a_tasks",
      "appeals",
      "checkpoints",
      "identity_log",
      "lanterns",
      "mail",
      "posts",
      "quarantine",
      "seals",
      "vault",
      "ward",
    ]);
  });

  it("the city card shows the lowered locker bound and every door's limits as configured", () => {
    const limits = cardLimits(registry);
    expect(limits.locker.bytesCityWide).toBe(1_000_000);
    expect(limits.clinic).toMatchObject({ citizenPerDay: 3, provenPerDay: 12, cityCeiling: 60 });
    expect(limits.doors["present-at-gate"]).toEqual(registry.find((d) => d.name === "present-at-gate")!.limits);
    // The origin's 7, the city-wide bound on counted addresses and origins (issue 29, item 8), then the
    // ward store's city-wide bounds (a ward request is kept there; item 1), one network's part of its
    // hour among them, as configured.
    expect(limits.doors["present-at-gate"]!.map((l) => l.limit)).toEqual([7, 20000, 268_435_456, 40_000, 4_000, 214_748_364, 200, 4_000, 268_435]);
    expect(limits.doors["describe-gate"]).toBeUndefined();
    expect(JSON.stringify(limits)).not.toContain("CITY_GATE_PER_ADDRESS_PER_HOUR");
  });
});
