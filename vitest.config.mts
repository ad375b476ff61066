import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import ClockWaitersFirst from "./tests/support/clock-sequencer.mts";
// V8's collector of WebAssembly code off, in this process and its worker threads (the module says why).
import "./tests/support/keep-wasm-code.mjs";

const root = path.dirname(fileURLToPath(import.meta.url));
const alias = { "@": root };

// The domain suites split in two projects by what a file does. A file that mocks modules, stubs a
// global, resets the module registry or touches globalThis runs isolated ("domain", a fresh module
// graph per file), as does one that spies, fakes timers or stubs the environment without undoing
// it when each test ends.
// Every other file runs in "domain-shared", without isolation: each worker thread imports the
// city's modules once and its files reuse them (importing them cost about 1.5 CPU-s a file; an
// isolated file's worker, about 2 CPU-s more on the slower machine here, most of it Node resolving
// node_modules afresh). Its setup file (tests/support/shared-setup.ts) gives each file the
// environment the worker started with and a freshly parsed env(), before the file loads: whatever a
// file writes to process.env (its configuration, at its top level or in a hook or a test) or makes
// env() forget holds for that file alone, as in isolation (the city reads its configuration
// through env() when it needs it). `--project domain --project domain-shared` runs both (npm test,
// npm run test:domain). (The HTTP project's check below is stricter: no fake timers at all.)
const MODULE_STATE_CALLS = "mock|doMock|unmock|stubGlobal|resetModules";
const keepsModuleState = new RegExp(`vi\\.(${MODULE_STATE_CALLS})\\b|globalThis`);
const count = (text: string, pattern: RegExp) => (text.match(pattern) ?? []).length;
/**
 * Whether a file's every test ends with what `made` starts undone, passed or failed: all of it by
 * `undoAll`, or each one by its own `undoEach` (none without one).
 */
const undone = (text: string, made: RegExp, undoAll: RegExp, undoEach?: RegExp) =>
  undoAll.test(text) || count(text, made) <= (undoEach ? count(text, undoEach) : 0);
/** Spies: all restored in a finally, or each by onTestFinished. */
const spiesRestored = (text: string) =>
  undone(text, /vi\.spyOn\(/g, /finally \{\s*vi\.restoreAllMocks\(\);/, /onTestFinished\(\(\) => \w+\.mockRestore\(\)\)/g);
/** Fake timers: all by afterEach, or each by onTestFinished. */
const timersRestored = (text: string) =>
  undone(text, /vi\.useFakeTimers\(/g, /afterEach\(\(\) => vi\.useRealTimers\(\)\)/, /onTestFinished\(\(\) => vi\.useRealTimers\(\)\)/g);
/** Environment stubs: all by afterEach (shared-setup would undo them before the next file anyway). */
const envStubsRestored = (text: string) => undone(text, /vi\.stubEnv\(/g, /afterEach\(\(\) => vi\.unstubAllEnvs\(\)\)/);
// A variable some module's state outlives a file with: db/pglite-prepared.ts keeps every text it
// was told to prepare, so a file that sets CITY_PREPARED_STATEMENTS=0 must start without them.
const setsEnvModulesKeep = /CITY_PREPARED_STATEMENTS/;
// tests/ has a folder per room of the code (docs/architecture.md): a capability's domain tests in
// tests/<capability>/, its tests against a real `next start` in tests/<capability>/http/. So the
// kind is the path's last folder and each project is one pattern: "http" takes every http/ folder,
// the domain projects everything else (tests/e2e/ holds Playwright's .spec.ts files, never these).
const HTTP_TESTS = "tests/**/http/**/*.test.ts";
const isHttpTest = (file: string) => file.split("/").includes("http");
const testFiles = readdirSync(path.join(root, "tests"), { recursive: true, encoding: "utf8" })
  .map((file) => `tests/${file.split(path.sep).join("/")}`)
  .filter((file) => file.endsWith(".test.ts"));
const domainFiles = testFiles.filter((file) => !isHttpTest(file));
// A support module that sets process.env when it loads would set it only for the first file of a
// worker that imports it: its importers, direct or not, stay isolated too. (An assignment to one
// variable: not a comparison, not an arrow after a read.) Except a default given at its top level,
// `process.env.NAME ??= "value";` (tests/support/gate.ts): shared-setup gives it to each file that
// imports the module, directly or not, before the file loads (supportEnv below), as the module's
// loading does in isolation.
const writesEnv = /process\.env(\.\w+|\[[^\]\n]+\])\s*(\?\?=|\|\|=|=(?![=>]))/;
const envDefault = /^process\.env\.(\w+) \?\?= "([^"\n]*)";$/gm;
// Relative specifiers (`../../support/gate`) and the alias's (`@/tests/support/gate`) alike; a
// specifier with TypeScript's output extension names its source (`../support/clock-sequencer.mjs`:
// clock-sequencer.mts, which the config itself loads as an ES module).
const sourceOf = (specifier: string) => (/\.m?js$/.test(specifier) ? specifier.replace(/js$/, "ts") : `${specifier}.ts`);
const localImports = (file: string) =>
  [...readFileSync(file, "utf8").matchAll(/from "(\.{1,2}\/[^"]+|@\/tests\/[^"]+)"/g)]
    .map((m) => sourceOf(m[1]!))
    .map((source) => (source.startsWith("@/") ? path.join(root, source.slice(2)) : path.resolve(path.dirname(file), source)))
    .filter((imported) => imported.includes(`${path.sep}tests${path.sep}`));
/** The defaults the support modules `file` loads give process.env, or null when one writes it otherwise. */
function supportEnvOf(file: string, seen = new Set<string>(), defaults: Record<string, string> = {}): Record<string, string> | null {
  for (const imported of localImports(file)) {
    if (seen.has(imported)) continue;
    seen.add(imported);
    const text = readFileSync(imported, "utf8");
    for (const [, name, value] of text.matchAll(envDefault)) defaults[name!] ??= value!;
    if (writesEnv.test(text.replace(envDefault, "")) || !supportEnvOf(imported, seen, defaults)) return null;
  }
  return defaults;
}
// Files a run leaves out of both domain projects (CITY_TEST_EXCLUDE, comma-separated paths from the
// repository's root: scripts/test.sh runs two of them in another lane). The command line's
// `--exclude` cannot do it: a project's own `exclude` and `include` override it.
const excludedByRun = (process.env.CITY_TEST_EXCLUDE ?? "").split(",").filter(Boolean);
const supportEnv: Record<string, Record<string, string>> = {};
const sharedFiles = domainFiles.filter((file) => {
  const full = path.join(root, file);
  const text = readFileSync(full, "utf8");
  if (
    excludedByRun.includes(file) ||
    keepsModuleState.test(text) ||
    !spiesRestored(text) ||
    !timersRestored(text) ||
    !envStubsRestored(text) ||
    setsEnvModulesKeep.test(text)
  )
    return false;
  const defaults = supportEnvOf(full);
  if (defaults && Object.keys(defaults).length) supportEnv[full] = defaults;
  return defaults !== null;
});

// The HTTP project shares its workers' modules (isolate: false below), so none of its files may
// leave module state behind for the next file of its worker: no module mocked, no timer faked, no
// global stubbed, no process.env written (a server's configuration is its environment, given when
// it starts). A spy is restored when its test finishes (onTestFinished), passed or failed.
const httpModuleState = new RegExp(`vi\\.(${MODULE_STATE_CALLS}|useFakeTimers|stubEnv)\\b|forgetEnv|globalThis`);
for (const file of testFiles.filter(isHttpTest)) {
  const text = readFileSync(path.join(root, file), "utf8");
  const found = httpModuleState.exec(text) ?? writesEnv.exec(text);
  if (found)
    throw new Error(
      `${file}: "${found[0]}" would carry over to the next file of its worker (the HTTP project shares modules); keep the city's state in its server`,
    );
  if (!spiesRestored(text))
    throw new Error(`${file}: a spy the HTTP project's shared modules would keep: restore it with onTestFinished(() => spy.mockRestore())`);
}

// The order tests run in inside every suite of describeOnDatabases that is not `ordered`
// (tests/support/databases.ts shuffles there): a new seed each run, printed so a failure that
// depends on the order is replayed with VITEST_SEED=<seed>. Files run in vitest's own order.
const seed = Number(process.env.VITEST_SEED) || Math.floor(Math.random() * 2 ** 31);
console.log(`test order seed ${seed} (replay: VITEST_SEED=${seed})`);

// The city's own log lines (JSON, level error or warn) in a test run come from tests that break
// things on purpose (a dropped connection, a provider that fails, a deadlock): they are expected,
// so they are kept out of the output and counted once at the end. CITY_TEST_LOGS=1 shows them.
const cityLogLine = /^\{"time":"[^"]+","level":"(error|warn)"/;
const shown = process.env.CITY_TEST_LOGS === "1";
const kept = globalThis as { cityLogLinesKept?: number };
if (kept.cityLogLinesKept === undefined) {
  kept.cityLogLinesKept = 0;
  process.on("exit", () => {
    if (kept.cityLogLinesKept)
      console.log(
        `${kept.cityLogLinesKept} error and warning lines the city logged while tests broke things on purpose were kept out of this output (CITY_TEST_LOGS=1 shows them).`,
      );
  });
}

export default defineConfig({
  resolve: { alias },
  test: {
    // Most test time is spent waiting on PostgreSQL and on `next start` servers, not on this
    // process: two files at a time even on a 2-core machine (vitest's default there is one).
    maxWorkers: 2,
    // Vitest's own, then every skipped test's reason and the slowest files (tests/support/run-summary.ts).
    reporters: ["default", "./tests/support/run-summary.ts"],
    // Root level only: vitest ignores a project's `sequence`. Files that may wait on the real clock
    // first (tests/support/clock-sequencer.mts), so that a wait does not end the run.
    sequence: { seed, sequencer: ClockWaitersFirst },
    onConsoleLog(log) {
      if (shown || !cityLogLine.test(log)) return;
      kept.cityLogLinesKept! += 1;
      return false;
    },
    // Once per run, whichever projects run: clears the last run's security figures, sums this run's.
    globalSetup: ["tests/support/figures-run.ts"],
    projects: [
      {
        resolve: { alias },
        test: {
          name: "domain",
          // Worker threads, not forked processes (vitest reads `pool` per project): measured on
          // this suite (2 cores, one run each), 164 s and 233 CPU-s in threads against 206 s and
          // 313 CPU-s in forks. Each thread has its own copy of process.env, so a suite's
          // configuration stays its own.
          pool: "threads",
          include: ["tests/**/*.test.ts"],
          exclude: [HTTP_TESTS, ...sharedFiles, ...excludedByRun],
          setupFiles: ["tests/support/setup.ts"],
          // Migrates one PGlite and one server database per run; every suite starts from a copy.
          globalSetup: ["tests/support/database-template.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: "domain-shared",
          pool: "threads",
          isolate: false,
          include: sharedFiles,
          setupFiles: ["tests/support/setup.ts", "tests/support/shared-setup.ts"],
          // Per file (its full path): the defaults its support modules give process.env.
          provide: { supportEnv },
          // Migrates one PGlite and one server database per run; every suite starts from a copy.
          globalSetup: ["tests/support/database-template.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: "http",
          pool: "threads",
          // Each worker thread imports the suites' modules once and its files reuse them, as in
          // domain-shared: an HTTP file talks to `next start` servers, so all the city's own state
          // is theirs. Measured 2026-11-30 (the project alone, back to back, twice each, quiet
          // machine): 165.8 and 165.2 CPU-s with the servers against 195.7 and 202.1 isolated.
          // A file that would leave module state behind is refused when the config loads (httpModuleState).
          isolate: false,
          include: [HTTP_TESTS],
          // No pooled sockets: each request its own connection (see the file).
          setupFiles: ["tests/support/http-setup.ts"],
          globalSetup: ["tests/support/database-template.ts", "tests/support/next-server.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
