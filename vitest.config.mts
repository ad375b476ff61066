import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const alias = { "@": path.dirname(fileURLToPath(import.meta.url)) };

export default defineConfig({
  resolve: { alias },
  test: {
    // Most test time is spent waiting on PostgreSQL and on `next start` servers, not on this
    // process: two files at a time even on a 2-core machine (vitest's default there is one).
    maxWorkers: 2,
    // Once per run, whichever projects run: clears the last run's security figures, sums this run's.
    globalSetup: ["tests/support/figures-run.ts"],
    projects: [
      {
        resolve: { alias },
        test: {
          name: "domain",
          include: ["tests/unit/**/*.test.ts", "tests/integration/**/*.test.ts"],
          setupFiles: ["tests/support/setup.ts"],
          // Migrates one PGlite and one server database per run; every suite starts from a copy.
          globalSetup: ["tests/support/database-template.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 60_000,
          // Files and tests run in random order, so no test passes only in file order; a suite
          // told as steps of one story opts out by name (describeOnDatabases' `ordered`).
          sequence: { shuffle: true },
        },
      },
      {
        resolve: { alias },
        test: {
          name: "http",
          include: ["tests/http/**/*.test.ts"],
          globalSetup: ["tests/support/next-server.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
