import { describe, expect, it } from "vitest";
import { buildLlmsTxt } from "@/lib/doors/surfaces/llms";
import { registry } from "@/lib/doors/registry";

const BASE = "https://city.test";

describe("llms.txt", () => {
  const text = buildLlmsTxt(registry, BASE);
  const quickStart = text.slice(text.indexOf("## Quick start"), text.indexOf("\nMachine-readable:"));

  it("opens with a quick start of five steps, before the door lists", () => {
    expect(text.indexOf("## Quick start")).toBeGreaterThan(0);
    expect(text.indexOf("## Quick start")).toBeLessThan(text.indexOf("## Reading doors"));
    expect(
      quickStart
        .split("\n")
        .filter((l) => /^\d\. /.test(l))
        .map((l) => l.slice(0, 2)),
    ).toEqual(["1.", "2.", "3.", "4.", "5."]);
    expect(quickStart).toContain('"ask": "bed"');
    expect(quickStart).toContain("Authorization: Bearer <citizen_secret>");
  });

  it("names in its quick start only doors the city has, with their methods", () => {
    const named = [...quickStart.matchAll(/`(GET|POST|DELETE) https:\/\/city\.test(\/[^`\s]*)`/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(named.length).toBeGreaterThanOrEqual(8);
    const served = new Set(registry.flatMap((d) => [d.path, ...(d.aliases ?? [])].map((p) => `${d.method} ${p}`)));
    for (const door of named) expect(served, door).toContain(door);
  });
});
