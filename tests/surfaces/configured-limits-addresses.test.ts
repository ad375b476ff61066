import { describe, expect, it } from "vitest";
import { buildLlmsTxt } from "@/lib/doors/surfaces/llms";
import { buildOpenApi } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";

/*
 * Per-address limits are in force only where the client address can be known. This file runs as
 * `next start` alone would (CITY_TRUSTED_PROXIES=0, not on Vercel), with the per-address variables
 * at their defaults: no document may publish a per-address bound the city cannot apply.
 */
Object.assign(process.env, { CITY_TRUSTED_PROXIES: "0", VERCEL: "" });

const BASE = "https://city.example";
type Limit = { name: string; limit: number; per: string };
const limitsOf = (doorName: string): Limit[] => {
  const paths = buildOpenApi(registry, BASE).paths as Record<string, Record<string, { operationId: string; "x-city-limits"?: Limit[] }>>;
  return (
    Object.values(paths)
      .flatMap((p) => Object.values(p))
      .find((o) => o.operationId === doorName)?.["x-city-limits"] ?? []
  );
};

describe("published limits where client addresses are unknown", () => {
  it("publish no per-address bound, and keep the city-wide and per-origin ones", () => {
    for (const door of ["present-at-gate", "describe-gate", "seek-hospital"]) {
      expect(
        limitsOf(door).filter((l) => l.per.includes("client address")),
        door,
      ).toEqual([]);
    }
    expect(limitsOf("present-at-gate").map((l) => l.name)).toEqual([
      "presentations",
      "admissions",
      "admissions_without_key",
      "admissions_without_bid",
      "admissions_per_sponsor",
      "counted_subjects",
      "city_ward_bytes",
      "city_ward_bytes_per_hour",
      "city_ward_newcomer_bytes_per_hour",
      "city_ward_newcomer_bytes",
      "city_ward_subject_bytes_per_hour",
      "city_ward_network_bytes_per_hour",
      "city_ward_citizen_bytes",
    ]);
    expect(limitsOf("seek-hospital").map((l) => l.name)).toContain("unsigned_filings_city");
    expect(buildLlmsTxt(registry, BASE)).not.toMatch(/per client address/);
  });
});
