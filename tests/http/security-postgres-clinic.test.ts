import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS } from "@/lib/city/protocols";
import { keyPair } from "../support/gate";
import { type Admitted, describeOnServer, signedProof, usePostgresCity } from "../support/postgres-city";
import { type FakeProvider, startFakeProvider } from "../support/providers";

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
  const consult = (who: Admitted, i: number) => city().post("/api/clinic", { words: `parallel question ${i}`, physician: i % 2 ? "hygieia" : "asclepius" }, who.citizen_secret);

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
    expect(city().count("clinic_attempts", `did = '${who.did}'`)).toBe(n);
    expect(city().count("clinic_attempts", `did = '${who.did}' AND verdict = 'admitted'`)).toBe(cap);
    expect(city().count("clinic_outcomes o JOIN clinic_attempts a ON a.id = o.attempt_id", `a.did = '${who.did}' AND o.outcome = 'answered'`)).toBe(cap);
  }

  it(`calls a provider exactly ${CAPS.citizenPerDay} times for a citizen's 8 parallel consultations`, async () => {
    await pastTheCap(await city().admit(), CAPS.citizenPerDay, 8);
  });

  it(`calls a provider exactly ${CAPS.provenPerDay} times for a proven citizen's 16 parallel consultations`, async () => {
    const who = await city().admit();
    expect((await city().post("/api/prove", await signedProof(city(), who.citizen_secret, await keyPair()), who.citizen_secret)).status).toBe(200);
    await pastTheCap(who, CAPS.provenPerDay, 16);
  });

  it(`stops at the city ceiling of ${CAPS.cityCeiling} under 64 parallel consultations from 16 citizens, and counts every attempt at the desk`, async () => {
    const people = await Promise.all(Array.from({ length: 16 }, () => city().admit()));
    const answeredBefore = city().count("clinic_attempts", "verdict = 'admitted'");
    const attemptsBefore = city().count("clinic_attempts");
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
    expect(city().count("clinic_attempts")).toBe(attemptsBefore + 64);
    expect(city().count("clinic_attempts", "verdict = 'admitted'")).toBe(CAPS.cityCeiling);
    for (const p of people) expect(city().count("clinic_attempts", `did = '${p.did}' AND verdict = 'admitted'`)).toBeLessThanOrEqual(CAPS.citizenPerDay);

    const gauges = (await city().get("/api/capabilities")).body.clinic_last_24h;
    expect(gauges.city_window).toEqual({ ceiling: CAPS.cityCeiling, window_seconds: CAPS.cityWindowSeconds, hits: attemptsBefore + 64, counted: true });
    expect(gauges.answered_last_24h).toMatchObject({ total: CAPS.cityCeiling, counted: true });
  }, 60_000);
});
