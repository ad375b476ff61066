import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defineConfig } from "@playwright/test";
import { CLINIC_API_KEY, statesDatabase } from "./tests/e2e/states-city";
import { madePgliteFolder } from "./tests/support/template-folder";

// Debian's Chromium headless shell: Playwright's own browser download does not work on our
// machines. The shell is Chromium's engine without the browser around it, what Playwright itself
// runs headless tests on; the whole browser's headless mode (/usr/bin/chromium, still accepted as
// CHROMIUM_PATH) spent 431 CPU-s in Chromium on this suite where the shell spends 216 (process
// accounting, the suite alone, back to back on a quiet machine, 2026-11-30: 5.1 against 3.1 min),
// the same 60 tests passing.
const chromium = process.env.CHROMIUM_PATH || "/usr/bin/chromium-headless-shell";
if (!existsSync(chromium)) {
  throw new Error(
    `No Chromium at ${chromium}. Install Debian's headless shell (apt-get install -y chromium-headless-shell) or set CHROMIUM_PATH to a Chromium binary.`,
  );
}

// Two servers on fresh PGlite folders: one the tests seed through the real doors, one left empty.
// Their ports are picked free by the system (never fixed ones, which another run or service may
// hold), once: the environment carries them to the workers, which load this file again.
const pickFreePort = () =>
  execFileSync(process.execPath, ["-e", 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'], {
    encoding: "utf8",
  }).trim();
process.env.CITY_E2E_PORT ||= pickFreePort();
process.env.CITY_E2E_EMPTY_PORT ||= pickFreePort();
const port = Number(process.env.CITY_E2E_PORT);
const emptyPort = Number(process.env.CITY_E2E_EMPTY_PORT);
// The seeded city starts on a copy of npm test's migrated PGlite when the run has made it by then
// (tests/support/template-folder.ts), as the HTTP suites' servers do: migrating a fresh folder cost
// its server 7.5 CPU-s more on Node 20 (12.6 to 13.6 against 5.0 to 5.9 to boot and answer, process
// accounting). The empty city keeps a fresh folder: the README's first boot, migrations and all.
if (!process.env.CITY_E2E_DATA_DIR) {
  process.env.CITY_E2E_DATA_DIR = mkdtempSync(path.join(os.tmpdir(), "city-e2e-"));
  const migrated = madePgliteFolder();
  if (migrated) cpSync(migrated, process.env.CITY_E2E_DATA_DIR, { recursive: true });
}
process.env.CITY_E2E_EMPTY_DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "city-e2e-empty-"));
// Where the seeding project leaves what it created (secrets included) for the checks that follow.
process.env.CITY_E2E_SEED_FILE ??= path.join(mkdtempSync(path.join(os.tmpdir(), "city-e2e-seed-")), "seed.json");
process.env.CITY_E2E_STATES_SEED_FILE ??= path.join(path.dirname(process.env.CITY_E2E_SEED_FILE), "states.json");

/*
 * A third city holds the plat's other states (away and exported citizens, exit, return and export
 * rows, an open clinic with its gauges, a disputed note, a broken chain): it runs on PostgreSQL, so
 * that the seed can edit the database beside the running server as an owner could (psql, with the
 * append-only trigger off), which an embedded PGlite folder does not allow. Its database is made and
 * migrated by its server's command, and dropped by the global teardown. Without TEST_DATABASE_URL
 * that project is left out and says so (in CI, CI=true, it is a failure, as for the vitest suites).
 */
const postgres = process.env.TEST_DATABASE_URL;
if (!postgres && process.env.CI === "true") throw new Error("TEST_DATABASE_URL is not set; CI runs the plat's states city on PostgreSQL.");
if (!postgres && !process.env.TEST_WORKER_INDEX) console.warn("The plat's states city (tests/e2e/states.*) is skipped: TEST_DATABASE_URL is not set.");
process.env.CITY_E2E_STATES_PORT ||= pickFreePort();
// The clinic's physician: a local stand-in speaking OpenAI's wire format, listening only while the seed consults it.
process.env.CITY_E2E_PROVIDER_PORT ||= pickFreePort();
process.env.CITY_E2E_STATES_DB ||= `city_e2e_states_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const statesPort = Number(process.env.CITY_E2E_STATES_PORT);

// Playwright's request client keeps idle connections and reuses them; Node closes an idle one after
// 5 s, and a request sent on it at that moment fails with ECONNRESET (seen: states.spec.ts's
// request.get("/peers") after some seconds of page work). The test servers keep them two minutes.
const NEXT_START = "node node_modules/next/dist/bin/next start --keepAliveTimeout 120000 -H 127.0.0.1";

const server = (listen: number, dataDir: string) => ({
  command: `${NEXT_START} -p ${listen}`,
  url: `http://127.0.0.1:${listen}/beacon.json`,
  reuseExistingServer: false,
  // Boots of 29 s were seen under load on this 2-core machine.
  timeout: 90_000,
  env: {
    DATABASE_URL: "",
    CITY_DATA_DIR: dataDir,
    CITY_BASE_URL: `http://127.0.0.1:${listen}`,
    // Every seeded citizen comes from 127.0.0.1 and one origin; the gate floods have tests of their own.
    CITY_GATE_PER_ADDRESS_PER_HOUR: "1000",
    CITY_GATE_PER_ORIGIN_PER_HOUR: "1000",
    NEXT_TELEMETRY_DISABLED: "1",
  },
});

const states = statesDatabase();
const statesServer = states && {
  ...server(statesPort, ""),
  command: `createdb ${states.connection.join(" ")} ${states.name} && npm run --silent db:migrate && exec ${NEXT_START} -p ${statesPort}`,
  env: {
    ...server(statesPort, "").env,
    DATABASE_URL: states.url,
    CITY_DB_DRIVER: "pg",
    CLINIC_ASCLEPIUS_BASE_URL: `http://127.0.0.1:${process.env.CITY_E2E_PROVIDER_PORT}/v1`,
    CLINIC_ASCLEPIUS_MODEL: "plat-states-model",
    CLINIC_ASCLEPIUS_API_KEY: CLINIC_API_KEY,
    CLINIC_ASCLEPIUS_PROTOCOL: "openai-chat",
  },
};

export default defineConfig({
  testDir: "tests/e2e",
  globalTeardown: "./tests/e2e/teardown.ts",
  fullyParallel: true,
  // Twice Playwright's 30 s: in CI the browser shares two cores with the other lanes of npm test,
  // where tests of 10 to 15 s idle were seen near 30 s. Tests that walk every page set their own.
  timeout: 60_000,
  workers: 2,
  // The five slowest spec files at the end (scripts/test.sh gathers them per lane): a reporter of
  // our own, since Playwright's reportSlowTests leaves out files whose tests ran on two workers.
  reporter: [[process.env.CI ? "list" : "line"], ["./tests/support/playwright-slowest.ts"]],
  reportSlowTests: null,
  use: {
    browserName: "chromium",
    // The plat works without JavaScript: every page and link is tested with it off.
    javaScriptEnabled: false,
    launchOptions: {
      executablePath: chromium,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    },
  },
  // Two projects: the seeds, then every check. Each file names its city (tests/e2e/plat.ts, CITIES),
  // so the workers of one project serve all three. A worker runs one project's tests only, and with a
  // project per city (five with their seeds) Playwright started 12 workers, each a Node process and
  // a browser; these two start 4.
  projects: [
    { name: "seed", testMatch: ["seed.setup.ts", ...(states ? ["states.setup.ts"] : [])] },
    { name: "plat", testMatch: ["empty.spec.ts", "seeded.spec.ts", "citizen.spec.ts", ...(states ? ["states.spec.ts"] : [])], dependencies: ["seed"] },
  ],
  webServer: [server(port, process.env.CITY_E2E_DATA_DIR), server(emptyPort, process.env.CITY_E2E_EMPTY_DATA_DIR), ...(statesServer ? [statesServer] : [])],
});
