import { describe, expect, it } from "vitest";
import { buildLlmsTxt } from "@/lib/doors/surfaces/llms";
import { describeGate } from "@/lib/doors/declarations/gate/gate";
import { registry } from "@/lib/doors/registry";

/*
 * Where client addresses are known, GET /gate publishes its per-address nonce quota, and says
 * what kind of bound it is (issue 42): GCRA, sliding, with the burst it allows.
 */
Object.assign(process.env, { CITY_TRUSTED_PROXIES: "1", CITY_GATE_PER_ADDRESS_PER_HOUR: "30" });

describe("the gate's per-address nonce quota as published", () => {
  it("is describe-gate's limit with its network's (issue 43): 30 per 3600 s per client address, GCRA, a burst of 30 then one every 120 s; 120 per /24 or /48", () => {
    expect(describeGate.limits).toEqual([
      {
        name: "gate nonces",
        limit: 30,
        window_seconds: 3600,
        per: "client address (GCRA, sliding: a burst of 30, then one every 120 s, so at most 30 + t / 120 in any t seconds); over it the 429 still carries the gate description without a nonce (env CITY_GATE_PER_ADDRESS_PER_HOUR; 0 is off)",
        over: "refused",
      },
      {
        name: "gate_nonces_per_prefix",
        limit: 120,
        window_seconds: 3600,
        per: "network: an IPv4 /24 or an IPv6 /48 (env CITY_GATE_PER_PREFIX_PER_HOUR; 0 is off)",
        over: "refused",
      },
    ]);
    expect(buildLlmsTxt(registry, "https://city.example")).toContain("GCRA, sliding: a burst of 30, then one every 120 s");
  });
});
