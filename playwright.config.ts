import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defineConfig } from "@playwright/test";

// Debian's Chromium: Playwright's own browser download does not work on our machines.
const chromium = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
if (!existsSync(chromium)) {
  throw new Error(
    `No Chromium at ${chromium}. Install Debian's (apt-get install -y chromium) or set CHROMIUM_PATH to a Chromium binary.`,
  );
}

// Two servers on fresh PGlite folders: one the tests seed through the real doors, one left empty.
// Their ports are picked free by the system (never fixed ones, which another run or service may
// hold), once: the environment carries them to the workers, which load this file again.
const pickFreePort = () =>
  execFileSync(process.execPath, ["-e", 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'], { encoding: "utf8" }).trim();
process.env.CITY_E2E_PORT ||= pickFreePort();
process.env.CITY_E2E_EMPTY_PORT ||= pickFreePort();
const port = Number(process.env.CITY_E2E_PORT);
const emptyPort = Number(process.env.CITY_E2E_EMPTY_PORT);
process.env.CITY_E2E_DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "city-e2e-"));
process.env.CITY_E2E_EMPTY_DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "city-e2e-empty-"));
// Where the seeding project leaves what it created (secrets included) for the checks that follow.
process.env.CITY_E2E_SEED_FILE ??= path.join(mkdtempSync(path.join(os.tmpdir(), "city-e2e-seed-")), "seed.json");

const server = (listen: number, dataDir: string) => ({
  command: `node node_modules/next/dist/bin/next start -H 127.0.0.1 -p ${listen}`,
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

export default defineConfig({
  testDir: "tests/e2e",
  fullyParallel: true,
  workers: 2,
  reporter: process.env.CI ? "list" : "line",
  use: {
    browserName: "chromium",
    // The plat works without JavaScript: every page and link is tested with it off.
    javaScriptEnabled: false,
    launchOptions: {
      executablePath: chromium,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    },
  },
  projects: [
    { name: "empty", testMatch: "empty.spec.ts", use: { baseURL: `http://127.0.0.1:${emptyPort}` } },
    { name: "seed", testMatch: "seed.setup.ts", use: { baseURL: `http://127.0.0.1:${port}` } },
    { name: "seeded", testMatch: "seeded.spec.ts", dependencies: ["seed"], use: { baseURL: `http://127.0.0.1:${port}` } },
  ],
  webServer: [server(port, process.env.CITY_E2E_DATA_DIR), server(emptyPort, process.env.CITY_E2E_EMPTY_DATA_DIR)],
});
