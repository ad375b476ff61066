import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const alias = { "@": path.dirname(fileURLToPath(import.meta.url)) };

/**
 * The tests Stryker runs against each mutant (stryker.config.mjs, `npm run test:mutation`): the
 * fast unit tests of the pure modules it mutates, no database and no server. A test here must
 * not time anything (a mutant can be slow without being wrong).
 */
export default defineConfig({
  resolve: { alias },
  test: {
    include: [
      "tests/**/*-mutants.test.ts",
      "tests/doors/client-address.test.ts",
      "tests/directory/name-form.test.ts",
      "tests/logs/transparency-log/witness-config.test.ts",
      "tests/gate/gate-rules.test.ts",
      "tests/scan/scan.test.ts",
      "tests/tlog/tlog-vectors.test.ts",
      "tests/challenge/gate-nonce-mac.test.ts",
      "tests/ground/sign-request.test.ts",
    ],
    // scan.test.ts's "speed" tests time the scanner against a wall-clock budget: a loaded machine
    // would kill a mutant that is not wrong, so they are left to the ordinary run.
    testNamePattern: /^(?!speed\b)/,
    setupFiles: [],
    environment: "node",
    pool: "threads",
    // Generous: Stryker's first (coverage) run takes every test here at once, and on the shared
    // machine under a load of 20 to 30 one file took more than 30 s and failed the run (2026-11-29).
    // A mutant's own timeout is Stryker's (stryker.config.mjs timeoutMS), not this.
    testTimeout: 120_000,
  },
});
