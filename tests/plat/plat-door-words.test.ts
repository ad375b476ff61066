import { describe, expect, it } from "vitest";
import { breakParts, formatBytes, formatLimit, formatWindow, schemaWords } from "@/lib/plat/door-words";

describe("the doors page's words", () => {
  it("says sizes in the largest whole binary unit, and counts with their thousands marked", () => {
    expect(formatBytes(268_435_456)).toBe("256 MiB");
    expect(formatBytes(2_147_483_648)).toBe("2 GiB");
    expect(formatBytes(32_768)).toBe("32 KiB");
    expect(formatBytes(1_000)).toBe("1,000 bytes");
    expect(formatBytes(1_536)).toBe("1,536 bytes");
    expect(formatLimit({ name: "city_ward_bytes", limit: 268_435_456 })).toBe("256 MiB");
    expect(formatLimit({ name: "counted_subjects", limit: 20_000 })).toBe("20,000");
  });

  it("says windows in hours, days and minutes", () => {
    expect(formatWindow(3_600)).toBe("an hour");
    expect(formatWindow(86_400)).toBe("a day");
    expect(formatWindow(600)).toBe("10 minutes");
    expect(formatWindow(604_800)).toBe("7 days");
    expect(formatWindow(45)).toBe("45 seconds");
  });

  it("breaks long names after their underscores, losing nothing", () => {
    expect(breakParts("CITY_STORE_NEWCOMER_PERCENT")).toEqual(["CITY_", "STORE_", "NEWCOMER_", "PERCENT"]);
    expect(breakParts("plain")).toEqual(["plain"]);
  });

  it("says a field's schema in a few words", () => {
    expect(schemaWords({ type: "string", enum: ["lock", "release"] })).toBe('one of "lock", "release"');
    expect(schemaWords({ type: "string", maxLength: 64 })).toBe("string, at most 64 characters");
    expect(schemaWords({ type: "string", pattern: "^[0-9a-f]{64}$" })).toBe("64 lowercase hex");
    expect(schemaWords({ type: "integer", minimum: 0, maximum: 168 })).toBe("integer, 0 to 168");
    expect(schemaWords({ type: "array", items: { type: "string" }, minItems: 1, maxItems: 3 })).toBe("array of string, 1 to 3 items");
    expect(schemaWords({ anyOf: [{ type: "string" }, { type: "null" }] })).toBe("string or null");
    expect(schemaWords({})).toBe("any JSON value");
  });
});
