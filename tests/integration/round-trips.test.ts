import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/db/client";
import { keepCheckpoint } from "@/lib/doors/checkpoints";
import { pathParams, type AnyDoor } from "@/lib/doors/door";
import { lightLantern } from "@/lib/doors/lanterns";
import { keepLockerBag } from "@/lib/doors/locker";
import { readPeers } from "@/lib/doors/peers";
import { sendMessageDoor } from "@/lib/doors/mail";
import { postPlaza, postRoom } from "@/lib/doors/posts";
import { registry } from "@/lib/doors/registry";
import { sealDoor } from "@/lib/doors/seals";
import { writeVault } from "@/lib/doors/vault";
import { readAndFileWard } from "@/lib/doors/ward";
import { seedCity } from "@/scripts/bench-seed";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

// Statements counted by the Drizzle logger hook (db/query-count.ts), reported in X-City-Queries;
// set before the test database opens, since the hook is chosen when a database is opened.
process.env.CITY_COUNT_QUERIES = "1";
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "30";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
const OPERATOR = "operator-secret-round-trips-0123456789abcdef";
process.env.CITY_OPERATOR_SECRET = OPERATOR;

const SEAL = "b".repeat(64);
const PARAMS: Record<string, string> = { bag: "notes", room: "lobby", sha256: SEAL };

type CallerKind = "visitor" | "citizen" | "operator";

/** Who can be served by a door: visitors, citizens (Bearer secret) or the operator. */
function callersOf(door: AnyDoor): CallerKind[] {
  if (door.auth === "none") return ["visitor"];
  if (door.auth === "optional") return ["visitor", "citizen"];
  return door.auth === "operator" ? ["operator"] : ["citizen"];
}

describeOnDatabases("database round trips of every reading door", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("serves every GET door of the registry in one round trip (plus the credential look-up), except the declared ones", async () => {
    // A small city with something on every shelf the reading doors show.
    await seedCity(t().db, 60);
    const writer = await admit();
    const reader = await admit();
    const as = (bearer: string, door: AnyDoor, body: unknown, params?: Record<string, string>) => callDoor(door, { bearer, body, params });
    await as(writer.citizen_secret, sendMessageDoor, { to: reader.did, body: "hello" });
    await as(writer.citizen_secret, postRoom, { body: "hello lobby" }, { room: "lobby" });
    await as(writer.citizen_secret, postPlaza, { body: "hello plaza" });
    await as(reader.citizen_secret, writeVault, { content: "mine" });
    await as(reader.citizen_secret, keepLockerBag, { bag: "notes", content: "n" });
    await as(reader.citizen_secret, keepCheckpoint, { content: "c1" });
    await as(reader.citizen_secret, lightLantern, { keyword: "hello" });
    await as(reader.citizen_secret, sealDoor, { sha256: SEAL });
    await as(reader.citizen_secret, readAndFileWard, { state: "stuck on a loop", kind: "distress" });
    const bearerOf: Record<CallerKind, string | undefined> = { visitor: undefined, citizen: reader.citizen_secret, operator: OPERATOR };

    const readingDoors = registry.filter((d) => d.method === "GET");
    // The honest exceptions, each with its reason on the door: the cards' first signature may
    // create the signing key, and log verification reads its head and moves it.
    expect(readingDoors.filter((d) => d.roundTrips).map((d) => d.name).sort()).toEqual(["read-agent-card", "read-card", "read-jwks", "verify-residency-log"]);
    const measured: string[] = [];
    for (const door of readingDoors) {
      const params = Object.fromEntries(pathParams(door.path).map((p) => [p, PARAMS[p]!]));
      for (const caller of callersOf(door)) {
        // A citizen's credential is one look-up (it marks presence in the same statement); the
        // operator's secret is compared in memory.
        const credential = caller === "citizen" ? 1 : 0;
        for (const round of [1, 2]) {
          // A versioned door reads the city's versions first: held, that is its one round trip;
          // its first answer also builds the page (two). The second call must be held.
          const budget = (door.roundTrips?.most ?? 1) + credential + (door.versioned && round === 1 ? 1 : 0);
          const answer = await callDoor(door, { bearer: bearerOf[caller], params });
          expect(answer.status, `${door.name} as ${caller}: ${JSON.stringify(answer.body).slice(0, 200)}`).toBe(200);
          const queries = Number(answer.headers.get("x-city-queries"));
          expect(answer.headers.get("x-city-queries"), `${door.name}: counted`).not.toBeNull();
          measured.push(`${door.name} ${caller} #${round}: ${queries}`);
          expect(queries, `${door.name} as ${caller}, call ${round}: ${queries} round trips, at most ${budget}`).toBeLessThanOrEqual(budget);
          if (door.versioned && round === 2) expect(queries, `${door.name}: held answer`).toBe(1);
        }
      }
    }
    // A directory search is answered fresh, never held: one round trip on every call, so no text
    // an anonymous caller sends is kept in memory (lib/doors/peers.ts, versioned.freshWith).
    for (const query of ["?q=bench-agent-1", "?q=agent&present=1&runtime=language-model", "?q=nobody-here&proven=1"]) {
      for (const round of [1, 2, 3]) {
        const answer = await callDoor(readPeers, { query });
        expect(answer.status).toBe(200);
        expect(answer.headers.get("x-city-queries"), `search ${query} #${round}`).toBe("1");
      }
    }
    // The cards make none once the key is known to the instance.
    expect(measured.filter((m) => /^read-(card|agent-card|jwks) visitor #2/.test(m)).map((m) => m.split(": ")[1])).toEqual(["0", "0", "0"]);
  });
});
