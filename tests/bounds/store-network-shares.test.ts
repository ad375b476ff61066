import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { setStripeCounters, stripeCounters } from "../support/store-stripes";
import { admit, callDoor, presentation } from "../support/gate";

// Shares per network (issue 43, item 1, migration 0053): the newcomers admitted from one network
// (an IPv4 /24, an IPv6 /48) together add at most CITY_STORE_NEWCOMER_NETWORK_PERCENT of a store's
// newcomers' hour. The oracle is the published arithmetic with fixed vectors: of 100,000 bytes an
// hour newcomers share 25,000; one newcomer 5 % of that, 1,250; one network's newcomers 20 %, 5,000:
// four newcomers at their whole share, a note of 1,250 bytes each (1,186 of text and 64).
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";
process.env.CITY_STORE_VAULT_BYTES = "10000000";
process.env.CITY_STORE_VAULT_BYTES_PER_HOUR = "100000";
process.env.CITY_STORE_NEWCOMER_PERCENT = "25";
process.env.CITY_STORE_NEWCOMER_SUBJECT_PERCENT = "5";
process.env.CITY_STORE_NEWCOMER_NETWORK_PERCENT = "20";
process.env.CITY_STORE_SUBJECT_PERCENT = "2";
const NOTE = 1_250;
const NETWORK_SHARE = 5_000;

describeOnDatabases("the newcomers of one network share one part of a store's newcomers' hour (issue 43)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const admitFrom = async (ip: string) => {
    const { status, body } = await callDoor(presentGate, { ip, body: presentation() });
    expect(body.verdict, JSON.stringify(body)).toBe("admitted");
    expect(status).toBe(200);
    return body as { did: string; citizen_secret: string };
  };
  const write = (secret: string, ip: string) =>
    callDoor(writeVault, { bearer: secret, ip, body: { content: `note ${randomBytes(4).toString("hex")} `.padEnd(NOTE - 64, "x") } });
  const networkOf = async (did: string) =>
    rowsOf<{ network: string }>(await t().db.execute(sql`SELECT network FROM newcomer_networks WHERE did = ${did}`))[0]?.network ?? "";

  it("one /24's newcomers fill exactly the network's share (429 past it); another /24's newcomer, a settled citizen of the /24 and one of no known network still write", async () => {
    const left = 3_600_000 - (Date.now() % 3_600_000);
    if (left < 30_000) await new Promise((r) => setTimeout(r, left + 200));
    await setStripeCounters(t().db, "vault", { total: 0, hour: 0, newcomer: 0 }, { total: 10_000_000, perHour: 100_000, newcomerPerHour: 25_000 });
    const flooders = [];
    for (let k = 0; k < NETWORK_SHARE / NOTE; k++) flooders.push(await admitFrom(`198.18.53.${k + 1}`));
    expect(await networkOf(flooders[0]!.did)).toBe("198.18.53.0/24");
    for (const f of flooders) expect((await write(f.citizen_secret, "198.18.53.200")).status).toBe(200);
    const fifth = await admitFrom("198.18.53.99");
    const refused = await write(fifth.citizen_secret, "198.18.53.99");
    const problem = expectProblem(refused, 429, "rate_limited");
    expect(problem.limit).toMatchObject({ name: "city_vault_network_bytes_per_hour", limit: NETWORK_SHARE, window_seconds: 3600, remaining: 0 });
    expect(problem.detail).toContain("198.18.53.0/24");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await stripeCounters(t().db, "vault")).toEqual({ total: NETWORK_SHARE, hour: NETWORK_SHARE, newcomer: NETWORK_SHARE });
    // Another /24's newcomer, and an IPv6 /48's.
    expect((await write((await admitFrom("192.0.2.7")).citizen_secret, "192.0.2.7")).status).toBe(200);
    const v6 = await admitFrom("2001:db8:53:1::1");
    expect(await networkOf(v6.did)).toBe("2001:db8:53::/48");
    expect((await write(v6.citizen_secret, "2001:db8:53:1::1")).status).toBe(200);
    // A settled citizen admitted from the same /24 is charged for no network.
    const settled = await admitFrom("198.18.53.77");
    await t().raw(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did = '${settled.did}'`);
    expect((await write(settled.citizen_secret, "198.18.53.77")).status).toBe(200);
    // A newcomer whose address the city did not know has no network recorded.
    const unknown = await admit();
    expect(await networkOf(unknown.did)).toBe("");
    expect((await write(unknown.citizen_secret, "198.18.53.78")).status).toBe(200);
  });

  it("an admission sweeps networks kept past their day, two at a time", async () => {
    await t().raw(
      `INSERT INTO newcomer_networks (did, network, admitted_at) SELECT 'did:old:' || g, '203.0.113.0/24', now() - interval '25 hours' - g * interval '1 second' FROM generate_series(1, 3) g`,
    );
    await admitFrom("192.0.2.8");
    const [left] = rowsOf<{ n: string }>(await t().db.execute(sql`SELECT count(*) AS n FROM newcomer_networks WHERE did LIKE 'did:old:%'`));
    expect(Number(left!.n)).toBe(1);
  });
});
