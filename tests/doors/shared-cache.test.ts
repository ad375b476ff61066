import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { pathParams, type AnyDoor } from "@/lib/doors/door";
import { readResidencyLog } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { registry } from "@/lib/doors/registry";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

// Read once, when the environment is first parsed: set before any door answers.
process.env.CITY_SHARED_CACHE_SECONDS = "3";
process.env.CITY_SHARED_CACHE_STALE_SECONDS = "7";
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
const OPERATOR = "operator-secret-shared-cache-0123456789abcdef";
process.env.CITY_OPERATOR_SECRET = OPERATOR;

const SHARED = "public, max-age=0, s-maxage=3, stale-while-revalidate=7";
const PARAMS: Record<string, string> = { bag: "notes", room: "lobby", sha256: "c".repeat(64) };
const paramsOf = (door: AnyDoor) => Object.fromEntries(pathParams(door.path).map((p) => [p, PARAMS[p]!]));

describeOnDatabases("answers a shared cache may keep, and the ones it never may", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("lets a shared cache keep the public readings named for it a few seconds (configured), revalidated by a strong ETag", async () => {
    const shared = registry
      .filter((d) => d.cache === "shared")
      .map((d) => d.name)
      .sort();
    expect(shared).toEqual([
      "list-peers",
      "read-bazaar",
      "read-beacon",
      "read-census",
      "read-identity-log",
      "read-plaza",
      "read-residency-log",
      "read-room",
      "read-ward",
    ]);
    await admit();
    for (const door of registry.filter((d) => d.cache === "shared")) {
      const first = await callDoor(door, { params: paramsOf(door) });
      expect(first.status, door.name).toBe(200);
      expect(first.headers.get("cache-control"), door.name).toBe(SHARED);
      const etag = first.headers.get("etag");
      expect(etag, door.name).toMatch(/^"[^"]+"$/); // strong, not W/
      const again = await serveWith(door, { "if-none-match": etag! });
      expect(again.status, door.name).toBe(304);
      expect(again.headers.get("cache-control"), door.name).toBe(SHARED);
    }
  });

  it("marks a log page wholly below the head immutable, and the head's page only briefly shared", async () => {
    for (let i = 0; i < 3; i++) await admit();
    const below = await callDoor(readResidencyLog, { query: "?after=0&limit=1" });
    expect(below.body.next_after).not.toBeNull();
    expect(below.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const head = await callDoor(readResidencyLog, { query: "?after=0&limit=500" });
    expect(head.body.next_after).toBeNull();
    expect(head.headers.get("cache-control")).toBe(SHARED);
  });

  it("never lets a shared cache keep a refusal, a caller's answer or a write", async () => {
    const bad = await callDoor(readPeers, { query: "?present=maybe" });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("cache-control")).toBe("no-store");
    const me = await admit();
    for (const door of registry) {
      if (door.auth === "none" || door.method !== "GET") continue;
      const bearer = door.auth === "operator" ? OPERATOR : me.citizen_secret;
      const answer = await callDoor(door, { bearer, params: paramsOf(door) });
      expect(answer.headers.get("cache-control"), `${door.name} ${answer.status}`).toMatch(/^(private, )?no-store$/);
      // A door that answers visitors and citizens alike names the credential as what varies.
      if (answer.status === 200) expect(answer.headers.get("vary"), door.name).toMatch(/Authorization/);
    }
    const written = await callDoor(
      registry.find((d) => d.name === "keep-locker-bag" || (d.path === "/api/locker" && d.method === "POST"))!,
      { bearer: me.citizen_secret, body: { bag: "notes", content: "x" } },
    );
    expect(written.status).toBe(200);
    expect(written.headers.get("cache-control")).toMatch(/no-store/);
  });
});

async function serveWith(door: AnyDoor, headers: Record<string, string>) {
  const { serveDoor } = await import("@/lib/doors/pipeline/http");
  let path = door.path;
  for (const [k, v] of Object.entries(paramsOf(door))) path = path.replace(`{${k}}`, v);
  return serveDoor(door, new Request(`http://city.test${path}`, { headers }), paramsOf(door));
}
