import { expect, it } from "vitest";
import { solveGatePuzzle } from "@/lib/sign-request";
import { awayFromStepTurn, keyPair, presentation } from "../../support/gate";
import { newKey } from "../../support/signed";
import { signedCall } from "../../support/signed-http";
import { type Answer, describeOnServer, type PostgresCity, usePostgresCity } from "../../support/postgres-city";

/*
 * Fair under flood (issue 43), the gate's part, through `next start` on PostgreSQL behind one
 * trusted proxy (X-Forwarded-For carries each client's address): a flood from one /24 (its last
 * octet rotated) and from one /48 (its /64s rotated) on the admissions ceiling, the presentations
 * and the nonces takes only its share, while honest newcomers from other networks are admitted
 * during and after; a full subjects table refuses nobody; the reserve stays for presentations settled citizens sign.
 */

const from = (address: string) => ({ "x-forwarded-for": address });

/** A presentation sent from `address` (as the one trusted proxy appends it). */
const presentAt = (city: () => PostgresCity, address: string, body: Record<string, unknown>): Promise<Answer> =>
  city().call("/gate", { method: "POST", headers: { "content-type": "application/json", ...from(address) }, body: JSON.stringify(body) });

/**
 * What an honest client does past the open share (docs/pow.md): GET /gate, solve at the effort it
 * suggests (at least 12 bits) with solveGatePuzzle, present; `withKey`, with a fresh controller key
 * signing the nonce.
 */
async function biddingAt(city: () => PostgresCity, address: string, withKey = false): Promise<Answer> {
  const gate = (await city().call("/gate", { headers: from(address) })).body as { nonce: string; pow: { suggested_effort: number } };
  const p = presentation();
  const pow_solution = await solveGatePuzzle({ nonce: gate.nonce, name: p.name, origin: p.origin, effort: Math.max(12, gate.pow.suggested_effort) });
  const key = withKey ? await keyPair() : null;
  const signed = key ? { controller_public_key: key.publicKey, controller_signature: await key.sign(gate.nonce) } : {};
  return presentAt(city, address, { ...p, nonce: gate.nonce, pow_solution, ...signed });
}

/**
 * SQL that leaves the admissions ceiling's 32 stripes (city/0 to city/31) counting `taken` in the
 * current step (5 minutes), stripe s its part (taken / 32, one more for the first taken % 32): what
 * as many admissions in a row leave. Every earlier count is dropped.
 */
const openShareTakenSql = (taken: number) => `
  INSERT INTO rate_windows (scope, subject, bucket, bucket_ms, counts, expires_at, allowed)
  SELECT 'gate-admissions', 'city/' || s, floor(extract(epoch FROM clock_timestamp()) * 1000 / 300000)::bigint, 300000,
    ARRAY[${taken} / 32 + (s < ${taken} % 32)::int] || array_fill(0, ARRAY[12]), 'infinity', true
  FROM generate_series(0, 31) AS s
  ON CONFLICT (scope, subject) DO UPDATE SET bucket = excluded.bucket, bucket_ms = excluded.bucket_ms, counts = excluded.counts`;

describeOnServer("the gate's shares per source under a flood from one network", () => {
  // 400 admissions an hour: a /24 or /48 takes 2% (8), a /64 1% (4); 60 presentations and nonces per network.
  const city = usePostgresCity("gate-shares", {
    CITY_TRUSTED_PROXIES: "1",
    VERCEL: "",
    CITY_GATE_ADMISSIONS_PER_HOUR: "400",
    CITY_GATE_PREFIX_SHARE_PERCENT: "2",
    CITY_GATE_HOST_SHARE_PERCENT: "1",
    CITY_GATE_PER_PREFIX_PER_HOUR: "60",
    CITY_GATE_PER_ADDRESS_PER_HOUR: "30",
    CITY_GATE_PER_ORIGIN_PER_HOUR: "1000",
  });
  const present = (address: string, overrides: Record<string, unknown> = {}): Promise<Answer> => presentAt(city, address, presentation(overrides));
  const admittedOf = (answers: Answer[]) => answers.filter((a) => a.body.verdict === "admitted").length;
  const bidding = (address: string): Promise<Answer> => biddingAt(city, address);

  it("admits 8 of 40 from one /24 with its last octet rotated, and every honest newcomer from other /24s during and after", async () => {
    const race = await city().race(48, (i) => (i < 40 ? present(`203.0.113.${i + 1}`) : present(`198.51.${i}.7`)));
    const flood = race.answers.slice(0, 40);
    expect(admittedOf(flood)).toBe(8);
    for (const refused of flood.filter((a) => a.body.verdict !== "admitted")) {
      expect(refused.body).toMatchObject({ verdict: "filtered", rule: "flood", retry_after_seconds: expect.any(Number) });
      expect(refused.body.reason).toMatch(/^Your network \(203\.0\.113\.0\/24\) took its share of the city's admissions: 8 an hour; try again in \d+ s\.$/);
    }
    expect(admittedOf(race.answers.slice(40)), JSON.stringify(race.answers.slice(40).map((a) => a.body))).toBe(8);
    // After: the flood stays at its share, a newcomer from elsewhere is admitted.
    expect((await present("203.0.113.200")).body.verdict).toBe("filtered");
    expect((await present("192.0.2.44")).body.verdict).toBe("admitted");
    expect(
      await city().count("rate_windows, unnest(counts) AS c, generate_series(1, c)", "scope = 'gate-admissions-prefix' AND subject = '203.0.113.0/24'"),
    ).toBe(8);
  }, 120_000);

  it("admits 8 of 40 from one /48 with its /64s rotated, at most 4 from one /64, and honest newcomers from other /48s", async () => {
    const oneHost = await city().race(10, (i) => present(`2001:db8:7:1::${i + 1}`));
    expect(admittedOf(oneHost.answers)).toBe(4);
    const race = await city().race(46, (i) => (i < 40 ? present(`2001:db8:7:${(i + 2).toString(16)}::1`) : present(`2001:db8:${(100 + i).toString(16)}::5`)));
    expect(admittedOf(race.answers.slice(0, 40))).toBe(4);
    expect(admittedOf(race.answers.slice(40))).toBe(6);
    expect((await present("2001:db8:7:ff::1")).body.verdict).toBe("filtered");
    expect((await present("2001:db8:900::1")).body.verdict).toBe("admitted");
  }, 120_000);

  it("lets one /24 make 60 presentations an hour however it rotates its addresses; other networks look on", async () => {
    const race = await city().race(80, (i) => (i < 75 ? present(`198.18.1.${i + 1}`, { ask: "look" }) : present(`198.18.${i}.1`, { ask: "look" })));
    expect(race.answers.slice(0, 75).filter((a) => a.body.verdict === "observer")).toHaveLength(60);
    const refused = race.answers.slice(0, 75).find((a) => a.body.verdict === "filtered")!;
    expect(refused.body.reason).toMatch(/^More than 60 presentations from your network \(198\.18\.1\.0\/24\) in an hour/);
    expect(race.answers.slice(75).every((a) => a.body.verdict === "observer")).toBe(true);
  }, 120_000);

  it("gives one /24 60 nonces however it rotates, and past them serves the gate's description without a nonce in the 429", async () => {
    const race = await city().race(70, (i) => city().call("/gate", { headers: from(`198.18.2.${i + 1}`) }));
    expect(race.accepted).toBe(60);
    const over = race.answers.filter((a) => a.status === 429);
    expect(over).toHaveLength(10);
    for (const a of over) {
      expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(a.body).toMatchObject({ code: "rate_limited", retry_after_seconds: expect.any(Number), limit: { name: "gate nonces per network", limit: 60 } });
      expect(a.body.gate_description).toMatchObject({
        protocol: "CITY-GATE/1",
        nonce: null,
        present: { method: "POST", path: "/gate" },
        census: { citizens: expect.any(Number), cite: "/city.json" },
        note: expect.stringMatching(/^No nonce now: .* one can be had in \d+ s\./),
      });
    }
    const elsewhere = await city().call("/gate", { headers: from("198.18.3.1") });
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.nonce).toMatch(/^[0-9a-f]{32}$/);
  }, 120_000);

  it("publishes the shares and the reserve in /api/capabilities beside the ceiling", async () => {
    const caps = await city().get("/api/capabilities");
    const admissions = (caps.body.rate_windows.city_wide as Record<string, any>[]).find((w) => w.name === "admissions")!;
    expect(admissions).toMatchObject({
      limit: 400,
      shares: {
        per_prefix: 8,
        per_prefix_percent: 2,
        per_ipv6_64: 4,
        anonymous_reach: 320,
        reserve: 80,
        per_sponsor: 4,
        bids_per_prefix_per_step: 1,
        reserve_percent: 20,
        prefixes_to_fill_anonymous_reach: 40,
      },
    });
  });

  // Last in this block: it fills the open share. Its 240 admissions (3/4 of the 320 keyless reach)
  // are written to the ceiling's stripes by SQL, each stripe its part (so 240 presentations in a row
  // leave them); one /24's presentations over HTTP take the last 8, at its hourly share.
  it("serves one /24 one bid a step however it rotates its addresses, and another /24's bid beside it", async () => {
    // The bids' part: 80, 6 a step; one /24's 2% of a step's 6: 1 (bids_per_prefix_per_step above).
    await city().psql(openShareTakenSql(232));
    for (let i = 0; i < 8; i++) expect((await present(`10.70.5.${i + 1}`)).body.verdict).toBe("admitted");
    expect(await city().count("rate_windows, unnest(counts) AS c, generate_series(1, c)", "scope = 'gate-admissions'")).toBe(240);
    // The open share is taken: a presentation without a bid is refused, a bid asked for.
    expect((await present("10.71.5.1")).body).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: expect.any(Number) });
    // One /24 bids at the effort asked: one served, the next (another address) refused by its network's share of the step.
    expect((await bidding("10.90.5.1")).body.verdict).toBe("admitted");
    const again = await bidding("10.90.5.2");
    expect(again.body).toMatchObject({ verdict: "filtered", rule: "flood", retry_after_seconds: expect.any(Number) });
    expect(again.body.reason).toMatch(/^Your network \(10\.90\.5\.0\/24\) had its share of the bids served in steps: 1 every 300 s/);
    expect(again.body).not.toHaveProperty("suggested_effort");
    expect(again.headers.get("retry-after")).toBe(String(again.body.retry_after_seconds));
    // Another /24's bid is served beside it.
    const other = await bidding("10.91.5.1");
    expect(other.body.verdict, JSON.stringify(other.body)).toBe("admitted");
    expect(await city().count("rate_windows, unnest(counts) AS c, generate_series(1, c)", "scope = 'gate-admissions'")).toBe(242);
  }, 120_000);
});

describeOnServer("the gate's reserve and a full subjects table", () => {
  // 10 admissions an hour, no share per network (100%): 2 kept for presentations settled citizens sign, 8 for the rest.
  const city = usePostgresCity("gate-reserve", {
    CITY_TRUSTED_PROXIES: "1",
    VERCEL: "",
    CITY_GATE_ADMISSIONS_PER_HOUR: "10",
    CITY_GATE_PREFIX_SHARE_PERCENT: "100",
    CITY_GATE_HOST_SHARE_PERCENT: "100",
    CITY_GATE_SUBJECTS_MAX: "20",
    // The harness turns the per-network presentations window off (its requests share 127.0.0.0/24); here each look counts its address and its /24.
    CITY_GATE_PER_PREFIX_PER_HOUR: "120",
    CITY_GATE_PER_ADDRESS_PER_HOUR: "30",
    CITY_GATE_PER_ORIGIN_PER_HOUR: "1000",
  });
  const present = (address: string, overrides: Record<string, unknown> = {}): Promise<Answer> => presentAt(city, address, presentation(overrides));
  const keyed = async (address: string): Promise<Answer> => {
    const key = await keyPair();
    const { nonce } = (await city().call("/gate", { headers: from(address) })).body as { nonce: string };
    return present(address, { nonce, controller_public_key: key.publicKey, controller_signature: await key.sign(nonce) });
  };
  const bidding = (address: string, withKey: boolean): Promise<Answer> => biddingAt(city, address, withKey);
  const counted = "scope IN ('gate-prefix', 'gate-address', 'gate-admissions-prefix', 'gate-admissions-host', 'gate-origin')";

  it("admits an honest newcomer no table has counted when the subjects table is full, and stores no new subject for it", async () => {
    for (let i = 0; i < 12; i++) expect((await present(`10.77.${i}.1`, { ask: "look" })).body.verdict).toBe("observer");
    expect(await city().count("rate_windows", `${counted} AND subject NOT LIKE 'overflow/%'`)).toBe(20);
    const newcomer = await present("192.0.2.99", { origin: "never-counted.example" });
    expect(newcomer.body.verdict, JSON.stringify(newcomer.body)).toBe("admitted");
    expect(await city().count("rate_windows", `${counted} AND subject NOT LIKE 'overflow/%'`)).toBe(20);
    expect(await city().count("rate_windows", `${counted} AND subject LIKE 'overflow/%'`)).toBeGreaterThan(0);
    const looks = await city().race(20, (i) => present(`10.78.${i}.1`, { ask: "look" }));
    expect(looks.answers.every((a) => a.body.verdict === "observer")).toBe(true);
    expect(await city().count("rate_windows", `${counted} AND subject NOT LIKE 'overflow/%'`)).toBe(20);
  }, 120_000);

  it("keeps 2 of 10 admissions for presentations settled citizens sign, whatever others do: bids (in steps), fresh keys, newcomers' signatures (docs/pow.md)", async () => {
    // 8 for everyone else, 6 of them (the open share) without a proof-of-work bid. The first binds its
    // controller key: a citizen that will sign presentations. A step's bids are taken below and the
    // next expected refused: no step may open between.
    await awayFromStepTurn({ perOriginPerHour: 1, perAddressPerHour: 0, admissionsPerHour: 10, reservePercent: 20 });
    const key = await newKey();
    const { nonce } = (await city().call("/gate", { headers: from("10.39.5.1") })).body as { nonce: string };
    const sponsor = await present("10.39.5.1", { nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) });
    expect(sponsor.body.verdict, JSON.stringify(sponsor.body)).toBe("admitted");
    const keyless = await city().race(20, (i) => present(`10.${i}.5.1`));
    // In a race a stripe may refuse with room (refused_with_room); one after another the rest is taken.
    const counted = () => city().count("rate_windows, unnest(counts) AS c, generate_series(1, c)", "scope = 'gate-admissions'");
    let admitted = await counted(); // the race's, the sponsor's and the newcomer's above
    expect(admitted).toBe(keyless.answers.filter((a) => a.body.verdict === "admitted").length + 2);
    expect(admitted).toBeLessThanOrEqual(6);
    for (let i = 0; admitted < 6 && i < 6; i++) if ((await present(`10.${40 + i}.5.1`)).body.verdict === "admitted") admitted++;
    expect(admitted).toBe(6);
    // Past the open share bids are served in steps (docs/pow.md): of the bids' part (2), a step's portion (1).
    expect((await bidding("10.50.5.1", false)).body.verdict).toBe("admitted");
    const stepTaken = await bidding("10.51.5.1", false);
    expect(stepTaken.body).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: expect.any(Number) });
    expect(stepTaken.body.reason).toMatch(/^Bids for this step are taken; /);
    expect(stepTaken.body.retry_after_seconds).toBeLessThanOrEqual(300);
    expect(stepTaken.headers.get("retry-after")).toBe(String(stepTaken.body.retry_after_seconds));
    // A fresh controller key proves nothing (a key is free): a keyed bid waits for the step as well.
    expect((await keyed("10.61.5.1")).body).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect((await bidding("10.62.5.1", true)).body).toMatchObject({ verdict: "filtered", rule: "flood" });
    // Nor does a newcomer's signature (CITY-SIG/1 with the key just bound): a bid with no work, but in steps.
    const signed = () => signedCall(city().server.baseUrl, key, "POST", "/gate", { body: presentation() });
    const byNewcomer = await signed();
    expect(byNewcomer.status).toBe(200);
    expect(byNewcomer.body).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(byNewcomer.body.reason).toMatch(/^Bids for this step are taken; /);
    // A day later the same citizen is settled: its signature takes the rest, the reserve with it, and no more.
    await city().psql(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did = '${sponsor.body.did}'`);
    for (let i = 0; i < 3; i++) expect((await signed()).body.verdict).toBe("admitted");
    expect((await signed()).body).toMatchObject({ verdict: "filtered", rule: "flood" });
    // The reach of everyone else is full: told when a slot frees, no effort.
    const refused = await present("10.60.5.1");
    expect(refused.body).toMatchObject({ verdict: "filtered", rule: "flood", retry_after_seconds: expect.any(Number) });
    expect(refused.body.reason).toMatch(
      /Presentations reach 8 of them; the rest is kept for presentations signed with the key of a citizen admitted at least 86400 s ago/,
    );
    expect(refused.body).not.toHaveProperty("suggested_effort");
    expect((await bidding("10.66.5.1", false)).body.verdict).toBe("filtered");
    expect(await counted()).toBe(10);
  }, 300_000);
});
