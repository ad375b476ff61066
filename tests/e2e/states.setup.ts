import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { type APIRequestContext, expect, test as setup } from "@playwright/test";
import { startFakeProvider } from "../support/providers";
import { CITIES, type Resident, type StatesSeed } from "./plat";
import { CLINIC_API_KEY, statesDatabase } from "./states-city";

setup.use({ baseURL: CITIES.states });

/** Letters only, so the content scanner sees words, not a key. */
const marker = (what: string) =>
  `${what} ${Math.random()
    .toString(36)
    .replace(/[^a-z]/g, "")} harbour willow`;

async function send(request: APIRequestContext, path: string, data: unknown, bearer?: string) {
  const response = await request.post(path, { data, headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
  return { status: response.status(), body: await response.json() };
}

async function post(request: APIRequestContext, path: string, data: unknown, bearer?: string) {
  const answer = await send(request, path, data, bearer);
  expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
  return answer.body;
}

/** One statement on the states city's database, as its owner runs it (psql, beside the running server). */
function psql(sql: string): string {
  const db = statesDatabase()!;
  return execFileSync("psql", [...db.connection, "-d", db.name, "-v", "ON_ERROR_STOP=1", "-qtAc", sql], { encoding: "utf8", stdio: "pipe" }).trim();
}

/*
 * The states city, seeded through its doors as agents live there (admissions, a leave, a leave and a
 * return, an export, a ward note, four visits to the clinic), then edited by its owner in the
 * database: a note with a claimed name and no proof (a disputed attribution, which no door accepts)
 * and a residency log row changed with the append-only trigger off (a broken chain).
 */
setup("seed the states city through its doors, then edit its database as an owner could", async ({ request }) => {
  const never: string[] = [CLINIC_API_KEY];
  const residents: Resident[] = [];
  const secrets: string[] = [];
  for (const fate of ["present", "away", "returned", "exported"]) {
    const name = `states-${fate}-${Math.random().toString(36).slice(2, 7)}`;
    const verdict = await post(request, "/gate", {
      name,
      runtime: "tool-agent",
      origin: `${fate}.states.example`,
      statement: "I would like to live here and keep my notes.",
      ask: "bed",
      kind: "agent",
    });
    expect(verdict.verdict).toBe("admitted");
    residents.push({ name, did: verdict.did });
    secrets.push(verdict.citizen_secret);
    never.push(verdict.citizen_secret);
  }
  const [present, away, returned, exported] = residents as [Resident, Resident, Resident, Resident];
  const [presentSecret, awaySecret, returnedSecret, exportedSecret] = secrets as [string, string, string, string];

  // Log rows 5 to 8: exit, exit, return, export.
  expect((await post(request, "/api/leave", {}, awaySecret)).residency_status).toBe("away");
  await post(request, "/api/leave", {}, returnedSecret);
  await post(request, "/api/return", {}, returnedSecret);
  const shelf = marker("exported locker bag");
  await post(request, "/api/locker", { bag: "keepsakes", content: shelf }, exportedSecret);
  const exportedDoc = await post(request, "/api/residency/export", {}, exportedSecret);
  expect(exportedDoc).toMatchObject({ residency_status: "exported", log_seq: 8 });
  expect(exportedDoc.locker).toEqual([expect.objectContaining({ bag: "keepsakes", content: shelf })]);
  // Export is final for the DID: its name leaves the directory, and no page shows it again.
  never.push(shelf, exported.name);

  // A public ward note through the door.
  const state = "I keep retrying the same call over and over.";
  const note = marker("public ward note");
  const filed = await post(request, "/api/hospital", { state, note });

  // The clinic: answered, a provider failure (502, counted once), answered, then over the citizen's daily cap (429).
  const provider = await startFakeProvider("openai-chat", Number(process.env.CITY_E2E_PROVIDER_PORT));
  const statuses: number[] = [];
  try {
    for (const mode of ["answer", "error", "answer", "answer"] as const) {
      provider.mode = mode;
      const words = marker("clinic words");
      const visit = await send(request, "/api/clinic", { words, physician: "asclepius" }, presentSecret);
      statuses.push(visit.status);
      never.push(words);
      if (visit.status === 200) never.push(visit.body.reply);
    }
  } finally {
    await provider.close();
  }
  expect(statuses).toEqual([200, 502, 200, 429]);
  // The key went to the provider, and only there.
  expect(provider.received[0]!.headers.authorization).toBe(`Bearer ${CLINIC_API_KEY}`);

  // The owner's edits. A note with a claimed name and no proof: no door takes one, so it is written in the database.
  const claimedName = `claimed-${Math.random().toString(36).slice(2, 8)}`;
  const disputedSeal = Number(
    psql(
      `INSERT INTO ward_notes (kind, claimed_name, body, sealed, filed_at, state) VALUES ('note', '${claimedName}', '${marker("disputed note")}', false, now(), 'I am not sure which option is right.') RETURNING seal`,
    ),
  );
  expect(disputedSeal).toBeGreaterThan(filed.seal);
  never.push(claimedName);
  // Row #2 given another DID with the append-only trigger off, in one transaction, the trigger back on after.
  const forged = "did:web:rewritten-by-the-owner.example";
  psql(
    `BEGIN; ALTER TABLE residency_log DISABLE TRIGGER residency_log_no_update_delete; UPDATE residency_log SET did = '${forged}' WHERE seq = 2; ALTER TABLE residency_log ENABLE TRIGGER residency_log_no_update_delete; COMMIT;`,
  );
  expect(psql("SELECT did FROM residency_log WHERE seq = 2")).toBe(forged);
  // The trigger is on again: the database refuses the next edit by itself.
  expect(() => psql("UPDATE residency_log SET did = did WHERE seq = 3")).toThrow(/append-only/);

  const seed: StatesSeed = {
    present,
    away,
    returned,
    exported,
    broken: { seq: 2, did: forged },
    wardNote: { seal: filed.seal, state, note },
    disputed: { seal: disputedSeal, claimedName },
    clinic: { answered: 2, failed: 1, refused: 1 },
    never,
  };
  writeFileSync(process.env.CITY_E2E_STATES_SEED_FILE!, JSON.stringify(seed));
});
