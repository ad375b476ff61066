import { expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../../support/limits";
import { presentation } from "../../support/gate";
import { type Admitted, describeOnServer, usePostgresCity } from "../../support/postgres-city";

/*
 * The built server on PostgreSQL through the Neon driver (the production path; a local relay
 * stands in for Neon's WebSocket proxy): parallel requests at the admission ceiling, the vault
 * window, the checkpoint count, the locker bags and a recovery code, with exact counts, then the
 * database taken away mid-run and given back. Runs when TEST_DATABASE_URL is set (in CI it must). The other
 * limits race in security-postgres-windows.test.ts and security-postgres-clinic.test.ts.
 */

describeOnServer("the built server on PostgreSQL under parallel load and faults", () => {
  // Admissions are bounded city-wide at 8 an hour here, so the admission race has a limit to meet.
  const city = usePostgresCity("security-postgres", { CITY_GATE_ADMISSIONS_PER_HOUR: "8" });
  const count = (table: string, where?: string) => city().count(table, where);
  const post = (path: string, body: unknown, bearer?: string) => city().post(path, body, bearer);

  let a: Admitted;
  let b: Admitted;

  it("admits exactly up to the city-wide admission ceiling when twelve present at once", async () => {
    a = await city().admit();
    b = await city().admit();
    const { answers, statuses } = await city().race(12, () => post("/gate", presentation()));
    expect(statuses).toEqual(Array(12).fill(200));
    // Past the ceiling the gate answers a filtered verdict (200), binding nothing.
    const admitted = answers.filter((x) => x.body.verdict === "admitted").length;
    // Never past what a presentation without a key nor a proof-of-work bid reaches (issue 43: 6 of 8
    // without a key, the reserve keeps 2; 4 of the 6 without a bid, docs/pow.md; 2 left). Over
    // stripes a taker may be refused while a stripe has room when the free stripe it locked was
    // filled meanwhile (published as refused_with_room), so twelve at once on one-slot stripes may
    // admit fewer; every admission is a citizen.
    expect(admitted, JSON.stringify(answers.map((x) => x.body.verdict))).toBeLessThanOrEqual(2);
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect(await count("citizens")).toBe(2 + admitted);
  });

  it("keeps exactly 30 of 40 parallel vault notes (30 an hour) and parks the other 10", async () => {
    const { accepted, statuses } = await city().race(40, (i) => post("/api/vault", { content: `note ${i}` }, a.citizen_secret));
    expect(accepted).toBe(30);
    expect(statuses.filter((s) => s === 202)).toHaveLength(10);
    expect(await count("vault_notes", `did = '${a.did}'`)).toBe(30);
    expect(await count("quarantine", `did = '${a.did}'`)).toBe(10);
  });

  it("keeps exactly 12 of 20 parallel checkpoint versions, numbered 1 to 12", async () => {
    const { accepted, statuses } = await city().race(20, (i) => post("/api/checkpoint", { content: `version ${i}` }, b.citizen_secret));
    expect(accepted).toBe(12);
    expect(statuses.filter((s) => s === 409)).toHaveLength(8);
    expect(await city().psql(`SELECT string_agg(version::text, ',' ORDER BY version) FROM checkpoints WHERE did = '${b.did}'`)).toBe(
      "1,2,3,4,5,6,7,8,9,10,11,12",
    );
  });

  it("keeps exactly 16 of 24 parallel new locker bags", async () => {
    const { accepted } = await city().race(24, (i) => post("/api/locker", { bag: `bag-${i}`, content: "x" }, b.citizen_secret));
    expect(accepted).toBe(16);
    expect(await count("locker_bags", `did = '${b.did}'`)).toBe(16);
  });

  it("redeems one recovery code once when it is sent ten times at once", async () => {
    const codes = (await post("/api/recover", { mint: true }, a.citizen_secret)).body.codes as string[];
    const { accepted, statuses } = await city().race(10, () => post("/api/recover", { did: a.did, code: codes[0] }));
    expect(accepted).toBe(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(9);
  });

  it(
    "answers 503 problems while the database is away, changes nothing half-way, and serves again by itself",
    async () => {
      const before = await count("vault_notes");
      // Past the admission ceiling by now (the first test filled it): b writes.
      const bearer = b.citizen_secret;

      // Fault 1: the relay (Neon's proxy) goes away.
      await city().stopRelay();
      city().figures.parallel_requests_postgres += 6;
      const during = await Promise.all(Array.from({ length: 6 }, (_, i) => post("/api/vault", { content: `during ${i}` }, bearer)));
      expect(during.map((x) => x.status)).toEqual(Array(6).fill(503));
      city().figures.faults_injected += 1;
      for (const answer of during) {
        expect(answer.type).toMatch(/^application\/problem\+json/);
        expect(answer.body).toMatchObject({ status: 503, code: "unavailable" });
      }
      await city().startRelay();
      await expect.poll(async () => (await city().call("/city.json")).status, { timeout: 20_000, interval: 250 }).toBe(200);
      expect(await count("vault_notes")).toBe(before);

      // Fault 2: every backend of the server is terminated while requests run, again and again until
      // the round's requests are answered, round after round until a cut lands mid-request (a 503):
      // a fault that never landed proves nothing. One cut a round missed all of ten rounds on a
      // loaded machine (the requests still queued in the server when it fell, or done). Rounds that
      // land no cut store their writes: past b's 30 an hour a write is parked (202, in quarantine,
      // not in the vault), past 60 parked refused (429).
      let kept = 0;
      const statuses: number[] = [];
      for (let round = 0; round < 10 && !statuses.includes(503); round++) {
        let answered = false;
        const writes = Promise.all(Array.from({ length: 8 }, (_, i) => post("/api/vault", { content: `racing ${round} ${i}` }, bearer))).finally(() => {
          answered = true;
        });
        city().figures.parallel_requests_postgres += 8;
        let ended = 0;
        do {
          ended += Number(
            await city().psql(
              `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '${city().database}' AND pid <> pg_backend_pid()`,
            ),
          );
          await new Promise((resolve) => setTimeout(resolve, 20));
        } while (!answered);
        const answers = await writes;
        expect(ended, "backends ended").toBeGreaterThan(0);
        for (const answer of answers) expect([200, 202, 429, 503], JSON.stringify(answer.body)).toContain(answer.status);
        statuses.push(...answers.map((x) => x.status));
        kept += answers.filter((x) => x.status === 200).length;
      }
      expect(statuses, "no cut landed mid-request in 10 rounds").toContain(503);
      city().figures.faults_injected += 1;
      expect(await count("vault_notes")).toBe(before + kept);
      // Served again: stored, or parked once the hour's 30 are stored (both written by the database).
      await expect
        .poll(async () => [200, 202].includes((await post("/api/vault", { content: "after" }, bearer)).status), { timeout: 20_000, interval: 250 })
        .toBe(true);
    },
    HEAVY_TEST_MS,
  );
});
