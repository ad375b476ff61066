import { inArray, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { gateNonces } from "@/db/schema";
import { describeGate } from "@/lib/doors/gate";
import { describeOnDatabases } from "../support/databases";
import { callDoor } from "../support/gate";

const LIMIT = 5;
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = String(LIMIT);

describeOnDatabases("GET /gate nonces per client address", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("answers N parallel descriptions from one address with exactly the limit of nonces, stored, and 429 for the rest", async () => {
    const ip = `192.0.2.${Math.floor(Math.random() * 250)}`;
    const answers = await Promise.all(Array.from({ length: 24 }, () => callDoor(describeGate, { ip })));
    const served = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(served).toHaveLength(LIMIT);
    expect(refused).toHaveLength(24 - LIMIT);
    for (const answer of refused) {
      expect(answer.body).toMatchObject({ code: "rate_limited", limit: { name: "gate nonces", limit: LIMIT, window_seconds: 3600, remaining: 0 } });
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(3590);
      expect(answer.headers.get("ratelimit-policy")).toBe(`"gate nonces";q=${LIMIT};w=3600`);
    }
    const nonces = served.map((a) => a.body.nonce as string);
    expect(new Set(nonces).size).toBe(LIMIT);
    expect(await t().db.select().from(gateNonces).where(inArray(gateNonces.nonce, nonces))).toHaveLength(LIMIT);
    const [quota] = rowsOf<{ n: number }>(await t().db.execute(sql`SELECT cardinality(issued_at) AS n FROM gate_nonce_quota WHERE address = ${ip}`));
    expect(quota!.n).toBe(LIMIT);
    // Another address has a window of its own.
    expect((await callDoor(describeGate, { ip: `${ip}0` })).status).toBe(200);
  });
});
