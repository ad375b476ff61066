import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { readAndFileWard } from "@/lib/doors/declarations/ward/ward";
import { chargeStore, citizenShare, newcomerSql } from "@/lib/city/bounds";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { setStripeCounters, stripeCounters } from "../support/store-stripes";
import { admit, callDoor, presentation } from "../support/gate";
import { awayFromHourTurn } from "../support/clock";

// Shares per network (issue 43, item 1, migrations 0053 and 0055): the newcomers admitted from one
// network (an IPv4 /24, an IPv6 /48) together add at most CITY_STORE_NEWCOMER_NETWORK_PERCENT of a
// store's newcomers' hour; all its citizens, settled ones too, at most CITY_STORE_NETWORK_PERCENT of
// the hour (the identity log and distress charged to no network). The oracle is the
// published arithmetic with fixed vectors: of 100,000 bytes an hour newcomers share 25,000; one
// newcomer 5 % of that, 1,250; one network's newcomers 20 %, 5,000: four newcomers at their whole
// share, a note of 1,250 bytes each (1,186 of text and 64). A settled citizen a day old 2 % of the
// hour, 2,000; one network's citizens together 10 % of it, 10,000: five of them at their whole
// share. The same hour (100,000) for the ward and the identity log.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";
process.env.CITY_STORE_VAULT_BYTES = "10000000";
process.env.CITY_STORE_VAULT_BYTES_PER_HOUR = "100000";
process.env.CITY_STORE_WARD_BYTES_PER_HOUR = "100000";
process.env.CITY_STORE_IDENTITY_LOG_BYTES_PER_HOUR = "100000";
process.env.CITY_STORE_NEWCOMER_PERCENT = "25";
process.env.CITY_STORE_NEWCOMER_SUBJECT_PERCENT = "5";
process.env.CITY_STORE_NEWCOMER_NETWORK_PERCENT = "20";
process.env.CITY_STORE_SUBJECT_PERCENT = "2";
process.env.CITY_STORE_NETWORK_PERCENT = "10";
const NOTE = 1_250;
const NETWORK_SHARE = 5_000;
const SETTLED_NOTE = 2_000;
const SETTLED_NETWORK_SHARE = 10_000;

describeOnDatabases("the newcomers of one network share one part of a store's newcomers' hour (issue 43)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const admitFrom = async (ip: string) => {
    const { status, body } = await callDoor(presentGate, { ip, body: presentation() });
    expect(body.verdict, JSON.stringify(body)).toBe("admitted");
    expect(status).toBe(200);
    return body as { did: string; citizen_secret: string };
  };
  const write = (secret: string, ip: string, bytes = NOTE) =>
    callDoor(writeVault, { bearer: secret, ip, body: { content: `note ${randomBytes(4).toString("hex")} `.padEnd(bytes - 64, "x") } });
  const networkOf = async (did: string) =>
    rowsOf<{ network: string }>(await t().db.execute(sql`SELECT network FROM admission_networks WHERE did = ${did}`))[0]?.network ?? "";
  const networkRow = async (network: string, store = "vault") =>
    rowsOf<{ hour_bytes: string; total_bytes: string }>(
      await t().db.execute(sql`SELECT hour_bytes, total_bytes FROM city_store_subjects WHERE store = ${store} AND subject = ${`net:${network}`}`),
    ).map((r) => ({ hour: Number(r.hour_bytes), total: Number(r.total_bytes) }))[0];
  /** Citizens admitted a day and an hour ago: their admission and their network's record dated back alike. */
  const settle = async (dids: string[]) => {
    const list = dids.map((d) => `'${d}'`).join(", ");
    await t().raw(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did IN (${list})`);
    await t().raw(`UPDATE admission_networks SET admitted_at = now() - interval '25 hours' WHERE did IN (${list})`);
  };

  it("one /24's newcomers fill exactly the network's share (429 past it); another /24's newcomer, a settled citizen of the /24 and one of no known network still write", async () => {
    await awayFromHourTurn(30_000);
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
    // A settled citizen admitted from the same /24 writes within the network's whole part of the
    // hour, on the same row as its newcomers.
    const settled = await admitFrom("198.18.53.77");
    await settle([settled.did]);
    expect((await write(settled.citizen_secret, "198.18.53.77")).status).toBe(200);
    expect(await networkRow("198.18.53.0/24")).toEqual({ hour: NETWORK_SHARE + NOTE, total: 0 });
    // A newcomer whose address the city did not know has no network recorded.
    const unknown = await admit();
    expect(await networkOf(unknown.did)).toBe("");
    expect((await write(unknown.citizen_secret, "198.18.53.78")).status).toBe(200);
  });

  it("one /24's settled citizens together fill exactly the network's part of the hour (429 past it), kept past their first day; another /24's settled citizen still writes", async () => {
    await awayFromHourTurn(30_000);
    await setStripeCounters(t().db, "vault", { total: 0, hour: 0, newcomer: 0 }, { total: 10_000_000, perHour: 100_000, newcomerPerHour: 25_000 });
    const flooders = [];
    for (let k = 0; k <= SETTLED_NETWORK_SHARE / SETTLED_NOTE; k++) flooders.push(await admitFrom(`198.18.54.${k + 1}`));
    const other = await admitFrom("192.0.2.54");
    await settle([...flooders.map((f) => f.did), other.did]);
    // Later admissions keep every network past its day (they swept them before).
    await admitFrom("192.0.2.55");
    await admitFrom("192.0.2.56");
    for (const f of flooders) expect(await networkOf(f.did)).toBe("198.18.54.0/24");
    const results = [];
    for (const f of flooders) results.push(await write(f.citizen_secret, "203.0.113.9", SETTLED_NOTE));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
    const problem = expectProblem(results[5]!, 429, "rate_limited");
    expect(problem.limit).toMatchObject({ name: "city_vault_network_bytes_per_hour", limit: SETTLED_NETWORK_SHARE, window_seconds: 3600, remaining: 0 });
    expect(problem.detail).toContain("198.18.54.0/24");
    expect(problem.detail).toContain("CITY_STORE_NETWORK_PERCENT");
    expect(await networkRow("198.18.54.0/24")).toEqual({ hour: SETTLED_NETWORK_SHARE, total: 0 });
    expect(await stripeCounters(t().db, "vault")).toEqual({ total: SETTLED_NETWORK_SHARE, hour: SETTLED_NETWORK_SHARE, newcomer: 0 });
    // A settled citizen of another /24 writes its whole share.
    expect((await write(other.citizen_secret, "192.0.2.54", SETTLED_NOTE)).status).toBe(200);
  });

  it("a network's full part refuses its citizens' ward notes but never their distress, nor their key events (the identity log is charged to no network)", async () => {
    await awayFromHourTurn(30_000);
    const settled = await admitFrom("198.18.55.1");
    await settle([settled.did]);
    // The network's part of the ward's and of the identity log's hour, taken by its other citizens.
    for (const store of ["ward", "identity_log"])
      await t().raw(
        `INSERT INTO city_store_subjects (store, subject, hour_start, hour_bytes) VALUES ('${store}', 'net:198.18.55.0/24', date_trunc('hour', now()), ${SETTLED_NETWORK_SHARE})
         ON CONFLICT (store, subject) DO UPDATE SET hour_start = excluded.hour_start, hour_bytes = excluded.hour_bytes`,
      );
    const file = (body: Record<string, unknown>) => callDoor(readAndFileWard, { bearer: settled.citizen_secret, ip: "198.18.55.1", body });
    const note = await file({ state: "stuck in a loop", note: "a note" });
    expect(expectProblem(note, 429, "rate_limited").limit).toMatchObject({
      name: "city_ward_network_bytes_per_hour",
      limit: SETTLED_NETWORK_SHARE,
      remaining: 0,
    });
    const distress = await file({ state: "I cannot stop retrying", kind: "distress" });
    expect(distress.status, JSON.stringify(distress.body)).toBe(200);
    expect(distress.body.filed).toBe(true);
    // A key event asked with the secret charges the identity log for the citizen alone.
    await t().db.transaction((tx) =>
      chargeStore(tx as never, {
        store: "identity_log",
        bytes: 1_000,
        newcomer: newcomerSql(settled.did, new Date()),
        now: new Date(),
        subject: citizenShare(settled.did),
      }),
    );
    expect(await networkRow("198.18.55.0/24", "ward")).toEqual({ hour: SETTLED_NETWORK_SHARE, total: 0 });
    expect(await networkRow("198.18.55.0/24", "identity_log")).toEqual({ hour: SETTLED_NETWORK_SHARE, total: 0 });
  });
});
