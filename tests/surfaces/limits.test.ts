import { describe, expect, it } from "vitest";
import { LIMITS } from "@/lib/city/protocols";
import { registry } from "@/lib/doors/registry";

/*
 * The spec's "Limits" table, in its own literal numbers, against what the city publishes: each
 * door's `limits` (the source of OpenAPI x-city-limits, llms.txt and the MCP tool text) and the
 * LIMITS the card serves. A wrong constant in the code turns this red; nothing here reads one.
 */

const published = (doorName: string, limitName: string) => {
  const d = registry.find((x) => x.name === doorName);
  expect(d, `door ${doorName}`).toBeDefined();
  const found = d!.limits?.filter((l) => l.name === limitName) ?? [];
  expect(found, `${doorName} publishes ${limitName}`).toHaveLength(1);
  return found[0]!;
};

describe("published limits are the spec's numbers", () => {
  it.each([
    // spec row                       door                limit           number        window   over
    ["Locker: 16 bags per citizen", "keep-locker", "bags", 16, undefined, "refused"],
    ["Locker: 262144 bytes per bag", "keep-locker", "bag_bytes", 262144, undefined, "refused"],
    ["Locker: 1048576 bytes per citizen", "keep-locker", "citizen_bytes", 1048576, undefined, "refused"],
    ["Locker: 2147483648 bytes city-wide", "keep-locker", "city_bytes", 2147483648, undefined, "refused"],
    ["Checkpoint shelf: 12 versions", "keep-checkpoint", "versions", 12, undefined, "refused"],
    ["Checkpoint shelf: 32768 bytes each", "keep-checkpoint", "version_bytes", 32768, undefined, "refused"],
    ["Vault notes: 30 per hour", "write-vault", "vault_notes", 30, 3600, "parked"],
    ["Mail: 60 per hour", "send-message", "mail", 60, 3600, "parked"],
    ["Bazaar: 20 per hour", "post-bazaar", "posts", 20, 3600, "parked"],
    ["Plaza: 20 per hour", "post-plaza", "posts", 20, 3600, "parked"],
    ["Rooms: 20 per hour", "post-room", "posts", 20, 3600, "parked"],
    ["Lot locks: 10 per hour", "lock-lot", "lot-locks", 10, 3600, "refused"],
    ["Appeals: 3 per day per citizen", "file-appeal", "appeals", 3, 86400, "refused"],
  ] as const)("%s", (_row, doorName, limitName, limit, windowSeconds, over) => {
    const l = published(doorName, limitName);
    expect(l.limit).toBe(limit);
    expect(l.window_seconds).toBe(windowSeconds);
    expect(l.over).toBe(over);
  });

  it("publishes a parked-write cap on every door that parks, no larger than twice its own hourly window", () => {
    for (const [doorName, hourly] of [
      ["write-vault", 30],
      ["send-message", 60],
      ["post-bazaar", 20],
      ["post-plaza", 20],
      ["post-room", 20],
    ] as const) {
      expect(registry.find((d) => d.name === doorName)!.whenRestricted).toBe("park");
      expect(published(doorName, "parked_writes")).toMatchObject({ limit: 2 * hourly, window_seconds: 3600, over: "refused" });
    }
    for (const d of registry.filter((x) => x.whenRestricted === "park"))
      expect(
        d.limits?.map((l) => l.name),
        d.name,
      ).toContain("parked_writes");
  });

  it("serves the spec's numbers in the card's LIMITS, including those no door publishes", () => {
    expect(LIMITS).toMatchObject({
      locker: { bagsPerCitizen: 16, bytesPerBag: 262144, bytesPerCitizen: 1048576, bytesCityWide: 2147483648 },
      checkpoints: { versions: 12, bytesPerVersion: 32768 },
      perHour: { vault: 30, mail: 60, bazaar: 20, plaza: 20, rooms: 20, lotLocks: 10 },
      appealsPerDay: 3,
      clinic: { citizenPerDay: 3, provenPerDay: 12, cityCeiling: 60, cityWindowSeconds: 86400 },
      restriction: { refusals: 3, windowSeconds: 86400 },
      gateNonce: { hexChars: 32, ttlSeconds: 600 },
      activeBedsPerNameAndOrigin: 1,
      presenceSeconds: 86400,
    });
  });
});
