import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Admitted, type Answer, describeOnServer, usePostgresCity } from "../../support/postgres-city";
import { type FakeProvider, startFakeProvider } from "../../support/providers";

/*
 * A clinic call racing its citizen's export (issue 29, item 6). The clinic looks its caller up
 * before its budget desk, outside the desk's transaction, so a call can be past the look-up when
 * the export commits. The desk takes the citizen's row lock (shared; export holds it exclusively)
 * and must refuse an exported citizen under it: after an export commits, no clinic call of that
 * citizen is counted or reaches a physician.
 *
 * The order is made, not hoped for: a connection of the test holds the residency log's head, so
 * the export stops after it has locked the citizen's row (it locks the row, then the head); the
 * clinic calls are sent and the test waits until PostgreSQL shows them waiting too (one at the
 * row, the others at the desk's lock behind it); then the head is let go, the export commits
 * first, and every clinic call reaches its desk after it. Raced through the built server on
 * PostgreSQL, through node-postgres and through the Neon driver.
 */

const ROUNDS = 3;
const CALLS = 6;

const refusedAsExported = (a: Answer) => a.status === 401 && /exported/.test(String(a.body.detail));

function clinicExportRaces(driver: "pg" | "neon") {
  describeOnServer(`the built server on PostgreSQL (${driver} driver): a clinic call racing its citizen's export`, () => {
    let openai: FakeProvider;
    // Registered before the city's hooks, so the provider listens before the server starts.
    beforeAll(async () => {
      openai = await startFakeProvider("openai-chat");
    });
    afterAll(async () => {
      await openai?.close();
    });
    const city = usePostgresCity(`security-postgres-clinic-export-${driver}`, () => ({
      ...(driver === "pg" ? { CITY_DB_DRIVER: "pg" } : {}),
      CLINIC_ASCLEPIUS_BASE_URL: openai.baseUrl,
      CLINIC_ASCLEPIUS_API_KEY: "sk-test-asclepius-provider-key",
      CLINIC_ASCLEPIUS_MODEL: "gpt-test",
      CLINIC_ASCLEPIUS_PROTOCOL: "openai-chat",
    }));

    const consult = (who: Admitted, i: number) => city().post("/api/clinic", { words: `a question while leaving ${i}` }, who.citizen_secret);
    async function untilWaiting(n: number) {
      // A failure bound only: the test counts waiters, it never times the server.
      for (let tries = 0; tries < 1200; tries++) {
        if ((await city().lockWaiters()) >= n) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`fewer than ${n} requests came to wait for a lock`);
    }

    it(`spends nothing for a citizen once its export has committed: ${CALLS} calls held at the desk behind the export, ${ROUNDS} rounds`, async () => {
      // Summed over the rounds, so a failure says how many calls spent after an export.
      const after = { sent: 0, notRefused: 0, physicianCalls: 0, attempts: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const who = await city().admit();
        const calls = openai.received.length;
        const head = new pg.Client({ connectionString: city().databaseEnv.DATABASE_URL });
        await head.connect();
        try {
          await head.query("BEGIN");
          // Every census stripe held: the export holds its citizen's row and waits for its stripe (its
          // UPDATE moves the counts); writes no longer lock the log's head, which held it here before.
          await head.query("SELECT 1 FROM census_counts FOR UPDATE");
          const exported = city().post("/api/residency/export", {}, who.citizen_secret);
          await untilWaiting(1);
          const clinic = city().race(CALLS, (i) => consult(who, i));
          await untilWaiting(1 + CALLS);
          await head.query("COMMIT");
          const exportAnswer = await exported;
          expect(exportAnswer.status, JSON.stringify(exportAnswer.body)).toBe(200);
          const race = await clinic;
          after.sent += CALLS;
          after.notRefused += race.answers.filter((a) => !refusedAsExported(a)).length;
        } finally {
          await head.end();
        }
        after.physicianCalls += openai.received.length - calls;
        after.attempts += await city().count("clinic_attempts", `did = '${who.did}'`);
        expect(await city().psql(`SELECT residency_status FROM citizens WHERE did = '${who.did}'`)).toBe("exported");
      }
      expect(after).toEqual({ sent: ROUNDS * CALLS, notRefused: 0, physicianCalls: 0, attempts: 0 });
    }, 240_000);

    it(`answers each call of a free race either before the export (counted, one physician call each) or refused as exported, ${ROUNDS} rounds`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const who = await city().admit();
        const calls = openai.received.length;
        const race = await city().race(CALLS + 1, (i) => (i === 3 ? city().post("/api/residency/export", {}, who.citizen_secret) : consult(who, i)));
        expect(race.answers[3]!.status, JSON.stringify(race.answers[3]!.body)).toBe(200);
        const clinic = race.answers.filter((_, i) => i !== 3);
        for (const answer of clinic) {
          if (answer.status === 200) continue;
          // Over the citizen's cap of 3 before the export, or after it: refused as exported.
          expect(refusedAsExported(answer) || (answer.status === 429 && answer.body.limit?.name === "clinic_calls"), JSON.stringify(answer.body)).toBe(true);
        }
        const ok = clinic.filter((a) => a.status === 200).length;
        expect(openai.received.length - calls).toBe(ok);
        expect(await city().count("clinic_attempts", `did = '${who.did}' AND verdict = 'admitted'`)).toBe(ok);
        // Afterwards: refused, nothing counted.
        const attempts = await city().count("clinic_attempts", `did = '${who.did}'`);
        expect(refusedAsExported(await consult(who, 99))).toBe(true);
        expect(await city().count("clinic_attempts", `did = '${who.did}'`)).toBe(attempts);
      }
    }, 240_000);
  });
}

clinicExportRaces("pg");
clinicExportRaces("neon");
