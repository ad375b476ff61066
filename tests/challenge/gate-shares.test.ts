import { sql } from "drizzle-orm";
import { beforeAll, beforeEach, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { issueNonce, offerNonce } from "@/lib/city/challenge";
import { presentAtGate } from "@/lib/city/gate";
import type { GateCircumstances, GateLimits, Verdict } from "@/lib/city/challenge";
import { describeOnDatabases } from "../support/databases";
import { insertCitizenRow } from "../support/citizens";
import { keyPair, presentation, sponsoredBy, useGateClock } from "../support/gate";

/*
 * Fair under flood (issue 43), the gate's part, on the domain functions (PGlite, and pg where
 * TEST_DATABASE_URL is set): a source's shares of the admissions ceiling and of presentations,
 * the reserve kept for presentations settled citizens sign, a sponsor's share, the full subjects table that refuses nobody for it, and
 * the nonce quota per network. tests/challenge/http/security-postgres-gate-shares.test.ts races the same
 * through `next start`.
 */

describeOnDatabases("the gate's shares per source, the reserve and the overflow (issue 43)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const clock = useGateClock();
  // Every test starts with empty windows (the ceiling's stripes emptied, not deleted: a city has them from its migration).
  beforeEach(async () => {
    await t().raw("DELETE FROM rate_windows WHERE scope <> 'gate-admissions'");
    await t().raw("UPDATE rate_windows SET counts = array_fill(0, ARRAY[cardinality(counts)]) WHERE scope = 'gate-admissions'");
  }, 120_000);
  const c = (limits: Partial<GateLimits>, ip: string | null, extra: Partial<GateCircumstances> = {}): GateCircumstances => ({
    now: clock.now(),
    ip,
    callerDid: null,
    credential: null,
    credentialRejected: false,
    limits: { perOriginPerHour: 100_000, perAddressPerHour: 0, admissionsPerHour: 0, ...limits },
    ...extra,
  });
  const present = (p: Record<string, unknown>, circumstances: GateCircumstances): Promise<Verdict> =>
    t().db.transaction((tx) => presentAtGate(tx as never, p as never, circumstances));
  const admitted = (answers: Verdict[]) => answers.filter((a) => a.verdict === "admitted").length;
  const keyed = async (circumstances: GateCircumstances) => {
    const key = await keyPair();
    const { nonce } = await issueNonce(t().db, clock.now(), null, 0);
    return present(presentation({ nonce, controller_public_key: key.publicKey, controller_signature: await key.sign(nonce) }), circumstances);
  };
  const rows = async (where: string) =>
    Number(rowsOf<{ n: number }>(await t().db.execute(sql.raw(`SELECT count(*)::int AS n FROM rate_windows WHERE ${where}`)))[0]!.n);

  // A ceiling of 80 an hour: a /24 or /48 may take 5% (4), a /64 3% (2); 80% (64) without a key, 48
  // of them without a proof-of-work bid (docs/pow.md): over 32 stripes, so that parallel takes rarely
  // meet a stripe filled meanwhile (refused_with_room), which is not what these tests are about.
  const shares: Partial<GateLimits> = { admissionsPerHour: 80, prefixSharePercent: 5, hostSharePercent: 3, reservePercent: 20 };

  it("lets one /24, its last octet rotated, take only its share of the admissions; newcomers from other /24s are admitted during and after", async () => {
    const flood = presentAtOnce(20, (i) => present(presentation(), c(shares, `203.0.113.${i}`)));
    const honest = present(presentation(), c(shares, "198.51.100.7"));
    const answers = await flood;
    expect(admitted(answers)).toBe(4);
    for (const a of answers.filter((x) => x.verdict === "filtered")) {
      expect(a).toMatchObject({ rule: "flood", retry_after_seconds: expect.any(Number) });
      expect((a as { reason: string }).reason).toMatch(/^Your network \(203\.0\.113\.0\/24\) took its share of the city's admissions: 4 an hour/);
    }
    expect((await honest).verdict).toBe("admitted");
    expect((await present(presentation(), c(shares, "192.0.2.200"))).verdict).toBe("admitted");
    // The flooding /24 stays at its share.
    expect((await present(presentation(), c(shares, "203.0.113.250"))).verdict).toBe("filtered");
  }, 120_000);

  it("lets one /48, its /64s rotated, take only its share, and one /64 a smaller share inside it", async () => {
    const oneHost = await presentAtOnce(5, () => present(presentation(), c(shares, "2001:db8:7:1::/64")));
    expect(admitted(oneHost), JSON.stringify(oneHost)).toBe(2);
    expect((oneHost.find((a) => a.verdict === "filtered") as { reason: string }).reason).toMatch(/^Your \/64 \(2001:db8:7:1::\/64\) took its share/);
    const rotated = await presentAtOnce(20, (i) => present(presentation(), c(shares, `2001:db8:7:${(i + 2).toString(16)}::/64`)));
    expect(admitted(rotated)).toBe(2);
    expect((await present(presentation(), c(shares, "2001:db8:8:1::/64"))).verdict).toBe("admitted");
    expect((await present(presentation(), c(shares, "203.0.113.1"))).verdict).toBe("admitted");
  }, 120_000);

  it("keeps the reserve for presentations signed by settled citizens: every other presentation reaches 80% of the ceiling, bid, keyed, signed by a newcomer or not (docs/pow.md)", async () => {
    // 10 an hour: 8 without a settled sponsor, of which 6 (the open share) without a bid.
    const limits = { admissionsPerHour: 10, prefixSharePercent: 100, hostSharePercent: 100, reservePercent: 20 };
    // This step's bids are taken below and the next refused: no step may open between.
    clock.clearOfStepTurn(c(limits, null).limits);
    const keyless = await presentAtOnce(12, (i) => present(presentation(i % 4 ? {} : { ask: "ward" }), c(limits, `10.${i}.0.1`)));
    // In a race a stripe may refuse with room (published: refused_with_room); one after another the rest is taken.
    let passed = keyless.filter((a) => a.verdict !== "filtered").length;
    expect(passed).toBeLessThanOrEqual(6);
    for (let i = 0; passed < 6 && i < 6; i++) if ((await present(presentation(), c(limits, `10.${50 + i}.0.1`))).verdict === "admitted") passed++;
    expect(passed).toBe(6);
    // Sponsors: citizens whose keys sign presentations (the caller of a CITY-SIG/1 request), one a day old.
    const newcomer = await insertCitizenRow(t().db);
    const settled = await insertCitizenRow(t().db, { boundAt: new Date(Date.now() - 25 * 3_600_000) });
    // Past the open share bids are served in steps (this step releases 1 of the bids' 2): a newcomer's
    // signatures, which need no work, take 1; the rest are told the step's bids are taken.
    const byNewcomer = [];
    for (let i = 0; i < 3; i++) byNewcomer.push(await present(presentation(), c(limits, `10.${60 + i}.0.1`, sponsoredBy(newcomer.did))));
    expect(admitted(byNewcomer)).toBe(1);
    expect((byNewcomer.find((a) => a.verdict === "filtered") as { reason: string }).reason).toMatch(/^Bids for this step are taken/);
    // A controller key that signs the nonce proves nothing (a fresh key is free): refused as well; so is
    // the signature of a citizen a day old whom the city restricted.
    expect(await keyed(c(limits, "10.98.0.1"))).toMatchObject({ verdict: "filtered", rule: "flood" });
    const restricted = await insertCitizenRow(t().db, { boundAt: new Date(Date.now() - 25 * 3_600_000), tier: "restricted" });
    expect(await present(presentation(), c(limits, "10.96.0.1", sponsoredBy(restricted.did)))).toMatchObject({ verdict: "filtered", rule: "flood" });
    // A settled citizen's signature reaches the rest, the reserve with it, at once and with no work, keyed or not.
    const sponsored = [await keyed(c(limits, "10.100.0.1", sponsoredBy(settled.did)))];
    for (let i = 0; i < 3; i++) sponsored.push(await present(presentation(), c(limits, `10.${101 + i}.0.1`, sponsoredBy(settled.did))));
    expect(admitted(sponsored)).toBe(3);
    const refused = (await present(presentation(), c(limits, "10.99.0.1"))) as { reason: string };
    expect(refused.reason).toMatch(
      /Presentations reach 8 of them; the rest is kept for presentations signed with the key of a citizen admitted at least 86400 s ago/,
    );
    expect(refused).not.toHaveProperty("suggested_effort");
    // Never past the ceiling.
    expect(await countedAdmissions()).toBe(10);
  }, 120_000);

  it("counts a sponsor's signatures on its own share: one settled citizen signs at most as many admissions an hour as one /64 may be admitted", async () => {
    // 100 an hour, a /64 (and so a sponsor) 3% of it: 3. Each presentation from a network of its own.
    const limits = { admissionsPerHour: 100, prefixSharePercent: 5, hostSharePercent: 3, reservePercent: 20 };
    const settled = await insertCitizenRow(t().db, { boundAt: new Date(Date.now() - 25 * 3_600_000) });
    const other = await insertCitizenRow(t().db, { boundAt: new Date(Date.now() - 48 * 3_600_000) });
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await present(presentation(), c(limits, `10.${120 + i}.0.1`, sponsoredBy(settled.did))));
    expect(admitted(answers)).toBe(3);
    const over = answers.find((a) => a.verdict === "filtered") as { rule: string; reason: string };
    expect(over.rule).toBe("flood");
    expect(over.reason).toContain(
      `The citizen whose key signed this presentation (${settled.did}) signed its share of the city's admissions and ward requests: 3 an hour`,
    );
    // Another sponsor, and an unsigned newcomer, are admitted.
    expect((await present(presentation(), c(limits, "10.130.0.1", sponsoredBy(other.did)))).verdict).toBe("admitted");
    expect((await present(presentation(), c(limits, "10.131.0.1"))).verdict).toBe("admitted");
  }, 120_000);

  it("counts the settled sponsors admitted from one network together on that network's share: no one network's citizens spend the reserve", async () => {
    // 100 an hour: a /24 5 (and so the sponsors of one network together), a /64 and a sponsor 3.
    // Each presentation from a network of its own: only the sponsors' network is shared.
    const limits = { admissionsPerHour: 100, prefixSharePercent: 5, hostSharePercent: 3, reservePercent: 20 };
    const day = { boundAt: new Date(Date.now() - 25 * 3_600_000) };
    const [a, b, third, elsewhere, unrecorded] = [
      await insertCitizenRow(t().db, day),
      await insertCitizenRow(t().db, day),
      await insertCitizenRow(t().db, day),
      await insertCitizenRow(t().db, day),
      await insertCitizenRow(t().db, day),
    ];
    const newcomer = await insertCitizenRow(t().db, { boundAt: new Date(Date.now() - 3_600_000) });
    for (const [citizen, network] of [
      [a, "198.51.47.0/24"],
      [b, "198.51.47.0/24"],
      [third, "198.51.47.0/24"],
      [elsewhere, "198.51.48.0/24"],
      [newcomer, "198.51.47.0/24"],
    ] as const)
      await t().raw(`INSERT INTO admission_networks (did, network, admitted_at) VALUES ('${citizen.did}', '${network}', now() - interval '25 hours')`);
    let k = 0;
    const signedBy = async (did: string) => present(presentation(), c(limits, `10.${140 + k++}.0.1`, sponsoredBy(did)));
    // A newcomer of the network signs first (a bid, in an idle city admitted): it spends nothing of
    // what the network's settled citizens may sign.
    expect((await signedBy(newcomer.did)).verdict).toBe("admitted");
    // Two sponsors of the network, each within its own share, sign 6 at once: the network's 5 are admitted.
    const answers = await presentAtOnce(6, (i) => signedBy(i < 3 ? a.did : b.did));
    expect(admitted(answers)).toBe(5);
    const over = answers.find((x) => x.verdict === "filtered") as { rule: string; reason: string };
    expect(over.rule).toBe("flood");
    expect(over.reason).toContain(
      "The citizens admitted from the network of the citizen whose key signed this presentation (198.51.47.0/24) signed that network's share of the city's admissions and ward requests: 5 an hour",
    );
    // A third sponsor of that network, under its own share, is refused for its network's.
    expect((await signedBy(third.did)).verdict).toBe("filtered");
    // Sponsors of another network, and one whose network was not recorded, sign theirs.
    expect((await signedBy(elsewhere.did)).verdict).toBe("admitted");
    expect((await signedBy(unrecorded.did)).verdict).toBe("admitted");
  }, 120_000);

  it("keeps counting a sponsor's presentations per address past its share, and gives back what a refused presentation's other windows took", async () => {
    // 100 an hour, a /64 (and a sponsor) 3: 3; a /24 5: 5; each address 30 presentations an hour.
    const limits = { admissionsPerHour: 100, prefixSharePercent: 5, hostSharePercent: 3, reservePercent: 20, perAddressPerHour: 30, perPrefixPerHour: 120 };
    const settled = await insertCitizenRow(t().db, { boundAt: new Date(Date.now() - 25 * 3_600_000) });
    const signedBy = sponsoredBy(settled.did);
    const sum = async (scope: string, subject: string) =>
      Number(
        rowsOf<{ n: number }>(
          await t().db.execute(
            sql`SELECT coalesce(sum((SELECT sum(x) FROM unnest(counts) AS x)), 0)::int AS n FROM rate_windows WHERE scope = ${scope} AND subject = ${subject}`,
          ),
        )[0]!.n,
      );
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await present(presentation(), c(limits, "10.140.0.1", signedBy)));
    expect(admitted(answers)).toBe(3);
    // Every presentation counted against its address and its /24, the two refused by the sponsor's share too.
    expect(await sum("gate-address", "10.140.0.1")).toBe(5);
    expect(await sum("gate-prefix", "10.140.0.0/24")).toBe(5);
    // What the refused ones took of the /24's share of admissions was given back: 3 taken, by the 3 admitted.
    expect(await sum("gate-admissions-prefix", "10.140.0.0/24")).toBe(3);
    expect(await sum("gate-sponsor", settled.did)).toBe(3);
    // A presentation refused by its origin's window gives back its sponsor's and its network's shares.
    const other = await insertCitizenRow(t().db, { boundAt: new Date(Date.now() - 25 * 3_600_000) });
    const byOther = sponsoredBy(other.did);
    const origin = { origin: "crowded.example" };
    const tight = { ...limits, perOriginPerHour: 1 };
    expect((await present(presentation(origin), c(tight, "10.141.0.1"))).verdict).toBe("admitted");
    const refused = (await present(presentation(origin), c(tight, "10.142.0.1", byOther))) as { verdict: string; reason: string };
    expect(refused.verdict).toBe("filtered");
    expect(refused.reason).toMatch(/admissions asked from this origin/);
    expect(await sum("gate-sponsor", other.did)).toBe(0);
    expect(await sum("gate-admissions-prefix", "10.142.0.0/24")).toBe(0);
    expect(await sum("gate-address", "10.142.0.1")).toBe(1);
  }, 120_000);

  it("counts no bid on its network's share of a step while the open share has room: three newcomer's signatures from one /24 in an idle city", async () => {
    // A /24 and a sponsor may take 5 an hour; a step's bids are 1 a network (gate-bids-prefix), but no step is open yet.
    const limits = { admissionsPerHour: 100, prefixSharePercent: 5, hostSharePercent: 5, reservePercent: 20 };
    const newcomer = await insertCitizenRow(t().db);
    const signedBy = sponsoredBy(newcomer.did);
    for (let i = 0; i < 3; i++) expect((await present(presentation(), c(limits, `10.150.0.${i + 1}`, signedBy))).verdict).toBe("admitted");
    expect(await rows("scope = 'gate-bids-prefix'")).toBe(0);
  }, 120_000);

  it("counts presentations per /24 or /48: a rotated flood of looks creates rows for its share only; other sources look on", async () => {
    const limits = { perPrefixPerHour: 5, perAddressPerHour: 30 };
    const looks = await presentAtOnce(15, (i) => present(presentation({ ask: "look" }), c(limits, `198.18.7.${i}`)));
    expect(looks.filter((a) => a.verdict === "observer")).toHaveLength(5);
    expect((looks.find((a) => a.verdict === "filtered") as { reason: string }).reason).toMatch(/presentations from your network \(198\.18\.7\.0\/24\)/);
    // Each address is counted first (one over its own limit never spends its network's), then the /24: 5 through.
    expect(await rows("scope = 'gate-prefix' AND subject = '198.18.7.0/24' AND (SELECT sum(c) FROM unnest(counts) c) = 5")).toBe(1);
    expect((await present(presentation({ ask: "look" }), c(limits, "198.18.8.1"))).verdict).toBe("observer");
  }, 120_000);

  it("refuses nobody for a full subjects table: a new source is counted in an overflow bucket, and the table grows no further", async () => {
    const limits = { perPrefixPerHour: 50, perAddressPerHour: 30, admissionsPerHour: 1000, subjectsMax: 12 };
    for (let i = 0; i < 12; i++) await present(presentation({ ask: "look" }), c(limits, `198.18.${i}.1`));
    const keyedScopes = "scope IN ('gate-prefix', 'gate-address', 'gate-admissions-prefix', 'gate-admissions-host', 'gate-origin')";
    expect(await rows(`${keyedScopes} AND subject NOT LIKE 'overflow/%'`)).toBe(12);
    // An honest newcomer from a network never counted is admitted, counted in the overflow buckets.
    const newcomer = await present(presentation({ origin: "uncounted.example" }), c(limits, "192.0.2.55"));
    expect(newcomer.verdict).toBe("admitted");
    expect(await rows(`${keyedScopes} AND subject NOT LIKE 'overflow/%'`)).toBe(12);
    expect(await rows(`${keyedScopes} AND subject LIKE 'overflow/%'`)).toBeGreaterThan(0);
    // A known source still counts on its own row.
    expect((await present(presentation({ ask: "look" }), c(limits, "198.18.0.1"))).verdict).toBe("observer");
    expect(await rows("scope = 'gate-address' AND subject = '198.18.0.1'")).toBe(1);
    // Many new sources after it: never refused for the table, never more than the fixed buckets.
    const more = await presentAtOnce(30, (i) => present(presentation({ ask: "look" }), c(limits, `192.0.${i}.9`)));
    expect(more.every((a) => a.verdict === "observer")).toBe(true);
    expect(await rows(`${keyedScopes} AND subject NOT LIKE 'overflow/%'`)).toBe(12);
    expect(await rows(`${keyedScopes} AND subject LIKE 'overflow/%'`)).toBeLessThanOrEqual(5 * 64);
  }, 120_000);

  it("quotas nonces per network: rotating addresses in one /24 gets that /24's quota, and the census is read all the same", async () => {
    const quota = { perAddressPerHour: 3, perPrefixPerHour: 5 };
    const offered = [];
    for (let i = 0; i < 8; i++) offered.push(await offerNonce(t().db, new Date(), { ip: `198.18.50.${i}`, ...quota }));
    expect(offered.filter((o) => o.nonce !== null)).toHaveLength(5);
    const refused = offered.find((o) => o.nonce === null)!;
    expect(refused.refused).toMatchObject({ quota: "prefix", retryAfterSeconds: expect.any(Number) });
    expect(refused.counts.citizens).toEqual(expect.any(Number));
    // Another /24 is not touched; one address over its own quota is refused by it, not by its network's.
    expect((await offerNonce(t().db, new Date(), { ip: "198.18.51.1", ...quota })).nonce).not.toBeNull();
    for (let i = 0; i < 3; i++) await offerNonce(t().db, new Date(), { ip: "198.18.52.1", ...quota });
    expect((await offerNonce(t().db, new Date(), { ip: "198.18.52.1", ...quota })).refused).toMatchObject({ quota: "address" });
    expect((await offerNonce(t().db, new Date(), { ip: "198.18.52.2", ...quota })).nonce).not.toBeNull();
  }, 120_000);

  async function countedAdmissions(): Promise<number> {
    const [row] = rowsOf<{ n: number }>(
      await t().db.execute(sql`SELECT coalesce(sum(c), 0)::int AS n FROM rate_windows, unnest(counts) AS c WHERE scope = 'gate-admissions'`),
    );
    return Number(row!.n);
  }
});

/** Runs n calls at once (parallel transactions on pg; one after another on PGlite's one connection). */
function presentAtOnce<T>(n: number, call: (i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => call(i)));
}
