// Mutation testing of the city's pure modules (issue 31): `npm run test:mutation` (scripts/mutation.sh).
// Stryker changes one thing at a time in the code below (an operator, a bound, a string, a branch)
// and runs the unit tests that cover it; a mutant no test notices "survives". The score is the
// share of mutants killed; below `thresholds.break` the command fails. Scores, the date of the
// last run and every surviving mutant (killed since, or explained as equivalent): docs/testing.md.
// CITY_MUTATION_REPORT: another folder for the reports and the sandbox, so that two runs of
// different modules can go side by side (reports/mutation by default).
const reports = process.env.CITY_MUTATION_REPORT || "reports/mutation";

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  // `related`: a mutant that only runs while a module loads (a rule's regular expression in the
  // table, a constant) is "static": it runs the test files that import its module, not all.
  vitest: { configFile: "vitest.mutation.config.mts", related: true },
  // Only the pure modules: no database, no server. A file that mixes SQL with pure code is mutated
  // on the pure lines only (a range), so its score never depends on the database suites.
  mutate: [
    // The transparency log's core: RFC 9162 tree, C2SP signed notes and checkpoints, tiles, the
    // outside verifier, the reference witness, the receipt carrier, the witnesses' configuration.
    "lib/tlog/tree.ts",
    "lib/tlog/note.ts",
    "lib/tlog/tiles.ts",
    "lib/tlog/verifying-client.ts",
    "lib/tlog/witness.ts",
    "lib/tlog/storage.ts",
    "lib/tlog/append.ts",
    "lib/city/logs/transparency-log/receipts.ts",
    "lib/city/logs/transparency-log/witnesses.ts:18-37",
    // The content scanner.
    "lib/scan/*.ts",
    // The name normal form (the rest of the file is the database backfill).
    "lib/city/directory/names.ts:6-53",
    // Client addresses.
    "lib/doors/pipeline/client-address.ts",
    // Rate windows: reading a taken slot back and the 429 (the rest builds SQL, judged by the
    // database suites).
    "lib/city/bounds/rate.ts:125-133",
    "lib/city/bounds/rate.ts:159-175",
    // Strict Ed25519 (every signed request and key proof) and did:key.
    "lib/city/keys/keys.ts",
    // The gate nonce's format and MAC check (the key's derivation reads the database: left out).
    "lib/city/challenge/nonce-mac.ts:25-32",
    "lib/city/challenge/nonce-mac.ts:49-83",
    // The bounds' arithmetic: GCRA's pace, retry and published terms; the bucketed window's counts
    // (the SQL builders between them are judged by the database suites).
    "lib/city/bounds/gcra.ts:20-22",
    "lib/city/bounds/gcra.ts:35-44",
    "lib/city/bounds/rate-buckets.ts:51-58",
    "lib/city/bounds/rate-buckets.ts:82-112",
    // The shares: a gate source's share and source, the admissions ceiling and its keyless reach;
    // the store bounds' reserve, shares and subjects (the SQL between them is the database suites').
    "lib/city/challenge/gate-prefixes.ts:23-48",
    "lib/city/challenge/gate-pow.ts:19-27",
    "lib/city/bounds/store-shares.ts:46-78",
    "lib/city/bounds/store-shares.ts:95-116",
    // CITY-SIG/1's checks: the keyid choice and the verification (its keys looked up by the test),
    // the fields' parsing, the profile (components, parameters, nonce, times), the authority rule
    // and Accept-Signature. The rest of the file reads the database or the request's body.
    "lib/doors/pipeline/signature.ts:210-302",
    "lib/doors/pipeline/signature.ts:305-367",
    "lib/doors/pipeline/signature.ts:378-414",
  ],
  // Vitest's own coverage per test picks the tests each mutant runs.
  coverageAnalysis: "perTest",
  // The shared 2-core machine: two test processes, a generous timeout for a loaded neighbour.
  concurrency: 2,
  timeoutMS: 10_000,
  timeoutFactor: 3,
  // The first (coverage) run runs every test of the run at once: 5 minutes (Stryker's default) was
  // not enough on the shared machine with a type check beside it (2026-11-30).
  dryRunTimeoutMinutes: 20,
  // Static mutants are run, not ignored: the scanner's whole rule table is built when its module
  // loads, so ignoring them would leave every pattern untested (and with vitest a mutant switched
  // on after the module loaded would survive without being judged).
  ignoreStatic: false,
  thresholds: { high: 90, low: 85, break: 85 },
  reporters: ["clear-text", "progress", "json", "html"],
  jsonReporter: { fileName: `${reports}/mutation.json` },
  htmlReporter: { fileName: `${reports}/mutation.html` },
  tempDirName: `${reports}/.stryker-tmp`,
  cleanTempDir: true,
};
