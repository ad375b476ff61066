import { afterAll, beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { originLimits, verifyOriginDoor } from "@/lib/doors/declarations/origin/origin";
import { forgetEnv } from "@/lib/env";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { startTestDns, type TestDns } from "../support/origin-servers";

/*
 * Issue 43, item 1, for CITY-ORIGIN/1's city-wide hour of proof tries: one source (an IPv4 /24, an
 * IPv6 /48, where client addresses are known) takes at most its share (10 % of
 * CITY_ORIGIN_PROOFS_PER_HOUR), so the many free citizens of one network cannot fill the city's
 * hour first. The city's DNS client asks a resolver of the test's own, which has no record: every
 * try is a quick 422 origin_unverified, counted.
 */
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_ORIGIN_PROOFS_PER_HOUR = "20";
process.env.CITY_ORIGIN_PROOF_INSECURE = "1";

let dns: TestDns;
beforeAll(async () => {
  dns = await startTestDns();
  process.env.CITY_DNS_SERVERS = `127.0.0.1:${dns.port}`;
  forgetEnv();
});
afterAll(async () => {
  await dns.stop();
  forgetEnv();
});

let n = 0;
const domain = () => `share-${++n}-${Math.random().toString(36).slice(2, 7)}.test`;

describeOnDatabases("origin proof tries: a source's share of the city's hour (issue 43)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const tryFrom = async (ip: string | undefined) => {
    const citizen = await admit({ origin: domain() });
    return callDoor(verifyOriginDoor, { bearer: citizen.citizen_secret, ip, body: { method: "dns" } });
  };

  it("publishes the share: 2 of 20 tries an hour per /24 or /48", () => {
    expect(originLimits().find((l) => l.name === "origin_tries_per_source")).toMatchObject({ limit: 2, window_seconds: 3600, over: "refused" });
  });

  it("refuses a network's third try of the hour (429, when to retry), while another network and an unknown address still try", async () => {
    for (const ip of ["203.0.113.1", "203.0.113.2"]) expectProblem(await tryFrom(ip), 422, "origin_unverified");
    const refused = await tryFrom("203.0.113.3");
    const problem = expectProblem(refused, 429, "rate_limited");
    expect(problem.detail).toContain("origin proof tries from your network (its IPv4 /24 or IPv6 /48)");
    expect(problem.limit).toMatchObject({ limit: 2, window_seconds: 3600, remaining: 0 });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Another network has its own share; an address the city cannot know is no bucket.
    expectProblem(await tryFrom("198.18.7.1"), 422, "origin_unverified");
    expectProblem(await tryFrom(undefined), 422, "origin_unverified");
  });
});
