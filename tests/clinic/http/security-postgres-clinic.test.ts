import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../../support/limits";
import { LIMITS } from "@/lib/city/protocols";
import { keyPair } from "../../support/gate";
import { type Admitted, describeOnServer, signedProof, usePostgresCity } from "../../support/postgres-city";
import { type FakeProvider, startFakeProvider } from "../../support/providers";

/*
 * The clinic's caps raced through real HTTP against the built server on PostgreSQL (Neon driver),
 * its two physicians configured on local stand-ins that speak the providers' wire formats: the
 * provider is called exactly as often as the caps allow, and the budget desk keeps one row per
 * attempt, answered or refused.
 */

const CAPS = LIMITS.clinic;

describeOnServer("the built server on PostgreSQL: the clinic's caps under parallel consultations", () => {
  let openai: FakeProvider;
  let anthropic: FakeProvider;
  // Registered before the city's hooks, so the providers listen before the server starts.
  beforeAll(async () => {
    openai = await startFakeProvider("openai-chat");
    anthropic = await startFakeProvider("anthropic-messages");
  });
  afterAll(async () => {
    await openai?.close();
    await anthropic?.close();
  });
  const city = usePostgresCity("security-postgres-clinic", () => ({
    CLINIC_ASCLEPIUS_BASE_URL: openai.baseUrl,
    CLINIC_ASCLEPIUS_API_KEY: "sk-test-asclepius-provider-key",
    CLINIC_ASCLEPIUS_MODEL: "gpt-test",
    CLINIC_ASCLEPIUS_PROTOCOL: "openai-chat",
    CLINIC_HYGIEIA_BASE_URL: anthropic.baseUrl,
    CLINIC_HYGIEIA_API_KEY: "sk-ant-test-hygieia-provider-key",
    CLINIC_HYGIEIA_MODEL: "claude-test",
    CLINIC_HYGIEIA_PROTOCOL: "anthropic-messages",
  }));

  const providerCalls = () => openai.received.length + anthropic.received.length;
  const consult = (who: Admitted, i: number) =>
    city().post("/api/clinic", { words: `parallel question ${i}`, physician: i % 2 ? "hygieia" : "asclepius" }, who.citizen_secret);

  /** n consultations at once from one citizen: its daily cap answered, the rest refused 429 and spending nothing. */
  async function pastTheCap(who: Admitted, cap: number, n: number) {
    const calls = providerCalls();
    const race = await city().race(n, (i) => consult(who, i));
    expect(race.accepted, race.statuses.join(",")).toBe(cap);
    expect(race.refused).toBe(n - cap);
    for (const answer of race.answers.filter((a) => a.status !== 200)) {
      expect(answer.status).toBe(429);
      expect(answer.body.limit).toMatchObject({ name: "clinic_calls", limit: cap });
    }
    expect(providerCalls() - calls).toBe(cap);
    expect(await city().count("clinic_attempts", `did = '${who.did}'`)).toBe(n);
    expect(await city().count("clinic_attempts", `did = '${who.did}' AND verdict = 'admitted'`)).toBe(cap);
    expect(await city().count("clinic_outcomes o JOIN clinic_attempts a ON a.id = o.attempt_id", `a.did = '${who.did}' AND o.outcome = 'answered'`)).toBe(cap);
  }

  it(`calls a provider exactly ${CAPS.citizenPerDay} times for a citizen's 8 parallel consultations`, async () => {
    await pastTheCap(await city().admit(), CAPS.citizenPerDay, 8);
  });

  it(`calls a provider exactly ${CAPS.provenPerDay} times for a proven citizen's 16 parallel consultations`, async () => {
    const who = await city().admit();
    expect((await city().post("/api/prove", await signedProof(city(), who.citizen_secret, await keyPair()), who.citizen_secret)).status).toBe(200);
    await pastTheCap(who, CAPS.provenPerDay, 16);
  });

  const newcomerSpent = () => city().count("clinic_attempts", "verdict = 'admitted' AND newcomer");
  /** Citizens admitted more than a day ago: ones who have stayed, outside the newcomers' share. */
  const settle = (people: Admitted[]) =>
    city().psql(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did IN (${people.map((p) => `'${p.did}'`).join(", ")})`);

  it(
    `holds the newcomers' share of ${CAPS.newcomerShare} under 60 parallel consultations from 20 citizens admitted a moment ago`,
    async () => {
      const newcomers = await Promise.all(Array.from({ length: 20 }, () => city().admit()));
      const left = CAPS.newcomerShare - (await newcomerSpent());
      const callsBefore = providerCalls();
      const cityBefore = await city().count("clinic_attempts", "verdict = 'admitted'");
      expect(20 * CAPS.citizenPerDay).toBeGreaterThan(left);
      const race = await city().race(60, (i) => consult(newcomers[i % 20]!, i));
      expect(race.accepted, race.statuses.join(",")).toBe(left);
      expect(race.answers.filter((a) => a.status === 429).every((a) => ["clinic_newcomer_share", "clinic_calls"].includes(a.body.limit?.name))).toBe(true);
      expect(race.answers.filter((a) => a.body.limit?.name === "clinic_newcomer_share").length).toBeGreaterThan(0);
      expect(providerCalls() - callsBefore).toBe(left);
      expect(await newcomerSpent()).toBe(CAPS.newcomerShare);
      // The reserve is still there for one who has stayed.
      const stayed = await city().admit();
      await settle([stayed]);
      expect((await consult(stayed, 1)).status).toBe(200);
      const gauges = (await city().get("/api/clinic")).body.gauges.city_window;
      expect(gauges).toMatchObject({ spent: cityBefore + left + 1, newcomer_share: CAPS.newcomerShare, newcomer_spent: CAPS.newcomerShare, counted: true });
    },
    HEAVY_TEST_MS,
  );

  it(
    `stops at the city ceiling of ${CAPS.cityCeiling} under 64 parallel consultations from 16 citizens, and counts every attempt at the desk`,
    async () => {
      const people = await Promise.all(Array.from({ length: 16 }, () => city().admit()));
      await settle(people);
      const answeredBefore = await city().count("clinic_attempts", "verdict = 'admitted'");
      const attemptsBefore = await city().count("clinic_attempts");
      const callsBefore = providerCalls();
      expect(answeredBefore).toBe(callsBefore);
      // 16 citizens x 3 calls = 48 allowed by the citizen caps, more than the ceiling leaves: the ceiling binds.
      const left = CAPS.cityCeiling - answeredBefore;
      expect(16 * CAPS.citizenPerDay).toBeGreaterThan(left);
      const race = await city().race(64, (i) => consult(people[i % 16]!, i));
      expect(race.accepted, race.statuses.join(",")).toBe(left);
      expect(race.refused).toBe(64 - left);
      expect(race.answers.filter((a) => a.body.limit?.name === "clinic_city_ceiling").length).toBeGreaterThan(0);
      expect(providerCalls()).toBe(CAPS.cityCeiling);
      expect(await city().count("clinic_attempts")).toBe(attemptsBefore + 64);
      expect(await city().count("clinic_attempts", "verdict = 'admitted'")).toBe(CAPS.cityCeiling);
      for (const p of people)
        expect(await city().count("clinic_attempts", `did = '${p.did}' AND verdict = 'admitted'`)).toBeLessThanOrEqual(CAPS.citizenPerDay);

      const gauges = (await city().get("/api/capabilities")).body.clinic_last_24h;
      // hits counts every attempt at the desk; spent is what the desk held to the ceiling: they agree with the rows.
      expect(gauges.city_window).toMatchObject({
        ceiling: CAPS.cityCeiling,
        window_seconds: CAPS.cityWindowSeconds,
        hits: attemptsBefore + 64,
        spent: CAPS.cityCeiling,
        remaining: 0,
        counted: true,
      });
      expect(gauges.answered_last_24h).toMatchObject({ total: CAPS.cityCeiling, counted: true });
    },
    HEAVY_TEST_MS,
  );
});
