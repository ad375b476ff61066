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

const port = Number(process.env.CITY_E2E_PORT || 3210);
process.env.CITY_E2E_DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "city-e2e-"));

export default defineConfig({
  testDir: "tests/e2e",
  fullyParallel: true,
  workers: 2,
  reporter: process.env.CI ? "list" : "line",
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: "chromium",
    launchOptions: {
      executablePath: chromium,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    },
  },
  webServer: {
    command: `node node_modules/next/dist/bin/next start -H 127.0.0.1 -p ${port}`,
    url: `http://127.0.0.1:${port}/beacon.json`,
    reuseExistingServer: false,
    timeout: 60_000,
    env: { DATABASE_URL: "", CITY_DATA_DIR: process.env.CITY_E2E_DATA_DIR, CITY_BASE_URL: `http://127.0.0.1:${port}`, NEXT_TELEMETRY_DISABLED: "1" },
  },
});
