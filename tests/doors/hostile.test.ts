import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { registry } from "@/lib/doors/registry";
import { type AnyDoor, isWrite, pathParams } from "@/lib/doors/door";
import { ProblemSchema } from "@/lib/errors";
import { describeOnDatabases } from "../support/databases";
import { admit } from "../support/gate";
import { hostileInput, hostileRawBody, type HostileRequest, schemaInput, sendHostile } from "../support/hostile";
import { tableDigests } from "../support/table-state";
import { activeSigningKey, forgetSigningKey } from "@/lib/city/signing";
import { identityLog } from "@/lib/city/logs/identity-log";
import { checkLogIdentity } from "@/lib/city/logs/residency-log";
import { recordFigures } from "../support/figures";

// Many citizens are admitted here; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";
process.env.CITY_OPERATOR_SECRET = "operator-secret-for-the-hostile-suite-0123456789";

// Runs per door, role and generator: small, so every door of the registry is covered in seconds;
// fewer on PostgreSQL, where each request costs round trips.
const runsOn = (driver: string) => (driver === "neon" ? 2 : 5);

/**
 * Refusals the spec says are counted (a failed proof or recovery attempt, a refused shelf write)
 * keep their accounting rows; every other refusal leaves every table as it was.
 */
const COUNTED_REFUSALS = new Set([
  "content_refused",
  // CITY-ORIGIN/1: every try at an origin proof is counted (committed before the city looks), proven or not.
  "origin_unverified",
]);

describeOnDatabases(
  "hostile input at every door",
  (t) => {
    let inputs = 0;
    beforeAll(async () => {
      useDatabase(t().db);
      // The city's signing key exists before the first request: a write makes it before its
      // transaction (invokeDoor), so otherwise whichever refused request came first in the run's
      // order would change signing_keys from no row to one (seen with VITEST_SEED=178561078).
      forgetSigningKey();
      await activeSigningKey(t().db);
      // So are both logs' identities (recorded on a new city by the first write's readySigning, even
      // one refused after it): otherwise a refused write can record them (seen with
      // VITEST_SEED=1828054047 on PGlite, at the operator's appeal door).
      await checkLogIdentity(t().db);
      await identityLog.checkLogIdentity(t().db);
    });
    afterAll(() => recordFigures(`hostile-${t().driver}`, { [`hostile_inputs_${t().driver}`]: inputs, doors_covered: registry.length }));

    // Every table's rows (a digest of each row's content, not only a count, so an UPDATE shows) after
    // the last request to a write door: the next request's "before" (one read per request instead of two). Nothing else writes between two checks of one test; each test
    // starts by counting afresh (a door's set-up admits a citizen).
    let counted: Record<string, string> | undefined;
    beforeEach(() => {
      counted = undefined;
    });

    /** One request: never a 5xx, a problem document for every 4xx, nosniff and a request id always. */
    async function check(door: AnyDoor, request: HostileRequest): Promise<void> {
      inputs += 1;
      const before = isWrite(door) ? (counted ?? (await tableDigests(t().db))) : undefined;
      counted = undefined;
      const answer = await sendHostile(door, request);
      const where = `${door.name} ${JSON.stringify(request).slice(0, 400)} -> ${answer.status} ${answer.text.slice(0, 300)}`;
      expect(answer.status, where).toBeLessThan(500);
      expect(answer.headers.get("x-content-type-options"), where).toBe("nosniff");
      expect(answer.headers.get("x-request-id"), where).toMatch(/^[A-Za-z0-9-]{8,64}$/);
      if (answer.status >= 400) {
        expect(answer.headers.get("content-type"), where).toMatch(/^application\/problem\+json/);
        const problem = ProblemSchema.parse(JSON.parse(answer.text));
        expect(problem.status, where).toBe(answer.status);
        if (before && !COUNTED_REFUSALS.has(problem.code ?? "")) {
          const after = await tableDigests(t().db);
          expect(after, where).toEqual(before);
          counted = after;
        }
      }
    }

    const asRequest = (door: AnyDoor, input: Record<string, unknown>, bearer?: string): HostileRequest => {
      const params: Record<string, string> = {};
      for (const name of pathParams(door.path)) params[name] = typeof input[name] === "string" ? (input[name] as string) : JSON.stringify(input[name] ?? "x");
      const rest = Object.fromEntries(Object.entries(input).filter(([k]) => !pathParams(door.path).includes(k)));
      const reads = door.method === "GET" || door.method === "DELETE";
      return { params, bearer, ...(reads ? { query: rest } : { body: { text: JSON.stringify(rest), type: "application/json" } }) };
    };

    for (const door of registry) {
      describe(`${door.name} (${door.method} ${door.path})`, () => {
        let secret: string | undefined;
        beforeAll(async () => {
          if (door.auth === "citizen" || door.auth === "optional") secret = (await admit()).citizen_secret;
          if (door.auth === "operator") secret = process.env.CITY_OPERATOR_SECRET;
        });
        const roles = () => [undefined, secret] as const;

        it("answers inputs shaped after its schema with no 5xx, as a visitor and as its caller", async () => {
          for (const bearer of roles()) {
            await fc.assert(
              fc.asyncProperty(schemaInput(door), (input) => check(door, asRequest(door, input, bearer))),
              { numRuns: runsOn(t().driver) },
            );
          }
        });

        it("answers hostile values with no 5xx and a problem document for every refusal", async () => {
          for (const bearer of roles()) {
            await fc.assert(
              fc.asyncProperty(hostileInput(door), (input) => check(door, asRequest(door, input, bearer))),
              { numRuns: runsOn(t().driver) },
            );
          }
        });

        if (door.method !== "GET" && door.method !== "DELETE") {
          it("answers broken bodies and wrong content types with a problem, changing nothing", async () => {
            await fc.assert(
              fc.asyncProperty(hostileRawBody(door), (body) => check(door, { body, bearer: secret, params: { [pathParams(door.path)[0] ?? "_"]: "1" } })),
              { numRuns: runsOn(t().driver) },
            );
          });
        }
      });
    }
  },
  { neon: "errors: the Neon driver rejects with the relay's WebSocket error event" },
);

describe("an unreachable Neon proxy", () => {
  it("is an outage (503), as the driver rejects with the WebSocket's error or close event", async () => {
    const { isDatabaseUnreachable } = await import("@/lib/doors/pipeline/database-guard");
    const event = { type: "error", target: {}, message: "" };
    expect(isDatabaseUnreachable(new Error("query failed", { cause: event }))).toBe(true);
    // A pool's connect (a write's first step) rejects with the event itself, unwrapped.
    expect(isDatabaseUnreachable(event)).toBe(true);
    expect(isDatabaseUnreachable({ type: "close", target: {}, code: 1006 })).toBe(true);
    expect(isDatabaseUnreachable({ type: "message", target: {} })).toBe(false);
    expect(isDatabaseUnreachable(new Error("query failed", { cause: { type: "error" } }))).toBe(false);
    expect(isDatabaseUnreachable(new Error("syntax error", { cause: new Error("bad") }))).toBe(false);
  });
});
