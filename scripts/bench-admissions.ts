// npm run bench:admissions [-- --seconds 20] [--connections 32] [--baseline <git rev>] [--runs 1] [--warmup 3]
//                           [--cpu-prof <folder>] [--keep-baseline] [--reuse-baseline]
// Admissions under load (issue 42): POST /gate asking for a bed, every request a new name, origin
// and client address (X-Forwarded-For through one trusted proxy), with the gate's windows on: the
// address's and the origin's, and the city-wide ceiling (high enough never to refuse, so every
// request takes it). Against `next start` of this checkout's build (run `npx next build` first) on
// a fresh PostgreSQL database, and with --baseline on the build of that revision (migrated by its
// own migrations). Each build's server is warmed up (--warmup s, not counted), then --runs runs of
// --seconds each alternate between the builds (so a change in the machine's other load falls on
// both). Prints per run the rate of admissions, p50 and p99, the share of the database's active
// backends waiting on a Lock (pg_stat_activity every 50 ms), and the CPU per admission of the
// server's process group and of the database's backends (/proc: CPU time, steady on a shared
// machine where the rate is not), then per build the min and median of the CPU. --cpu-prof writes
// a V8 CPU profile of each server into that folder when it stops (node --cpu-prof). --keep-baseline
// keeps the baseline's built copy; --reuse-baseline measures a kept copy of the same revision again.
import { loadavg } from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { baselineApp, removeCopies } from "./bench-floor";
import { backendsOf, cpuBetween, type CpuPerRequest, type CpuSources, readCpu } from "./bench-cpu";
import { type LockSampler, openLockSampler } from "./bench-locks";
import { type BenchServer, migratedDatabase, startNextServer } from "./bench-server";
import { optionOr } from "./options";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => optionOr(args, name, fallback);
const seconds = Number(option("seconds", "20"));
const connections = Number(option("connections", "32"));
const baselineRev = option("baseline", "");
const runs = Number(option("runs", "1"));
const warmup = Number(option("warmup", "3"));
const cpuProf = option("cpu-prof", "");
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const root = process.cwd();

const WINDOWS = {
  CITY_TRUSTED_PROXIES: "1",
  CITY_GATE_PER_ADDRESS_PER_HOUR: "30",
  CITY_GATE_PER_ORIGIN_PER_HOUR: "30",
  CITY_GATE_ADMISSIONS_PER_HOUR: "1000000",
  CITY_GATE_SUBJECTS_MAX: "1000000",
};

interface Figures {
  build: string;
  run: number;
  admitted: number;
  rate: number;
  p50: number;
  p99: number;
  non2xx: number;
  lockShare: number | null;
  cpu: CpuPerRequest | null;
}

/** One build's server on its own database, with what reads its CPU and counts its citizens. */
interface Setup {
  build: string;
  server: BenchServer;
  cpu: CpuSources;
  sampler: LockSampler;
  counter: pg.Client;
  dispose: () => Promise<void>;
}

let requestSerial = 0;

async function main(): Promise<void> {
  const figures: Figures[] = [];
  const baselineDir = baselineRev ? baselineApp(root, baselineRev, args.includes("--reuse-baseline")) : null;
  const setups: Setup[] = [];
  try {
    setups.push(await setUp("this checkout", root, null, "this"));
    if (baselineDir) setups.push(await setUp(`baseline ${baselineRev}`, baselineDir, baselineDir, "baseline"));
    for (const setup of setups) await load(setup.server, warmup);
    for (let run = 1; run <= runs; run++)
      for (const setup of setups) {
        const f = await measure(setup, run);
        figures.push(f);
        console.log(row(f));
      }
  } finally {
    for (const setup of setups) await setup.dispose();
    if (baselineDir && !args.includes("--keep-baseline")) removeCopies(root);
  }
  console.log(`\nPOST /gate (ask bed), ${connections} in flight, ${seconds} s a run, pg; load average ${loadAverage()}`);
  console.log("| build | run | admitted/s | p50 ms | p99 ms | non-2xx | active backends waiting on a Lock | CPU ms per admission (server + PostgreSQL) |");
  console.log("|---|---|---|---|---|---|---|---|");
  for (const f of figures) console.log(row(f));
  console.log("\n| build | runs | server CPU ms per admission, min / median | PostgreSQL CPU ms per admission, min / median |");
  console.log("|---|---|---|---|");
  for (const setup of setups) {
    const own = figures.filter((f) => f.build === setup.build && f.cpu);
    const of = (pick: (c: CpuPerRequest) => number) => minMedian(own.map((f) => pick(f.cpu!)));
    console.log(`| ${setup.build} | ${own.length} | ${of((c) => c.server)} | ${of((c) => c.database ?? 0)} |`);
  }
}

const row = (f: Figures) =>
  `| ${f.build} | ${f.run} | ${f.rate.toFixed(1)} | ${f.p50} | ${f.p99} | ${f.non2xx} | ${f.lockShare === null ? "–" : `${(f.lockShare * 100).toFixed(0)} %`} | ${f.cpu ? `${f.cpu.server.toFixed(2)} + ${(f.cpu.database ?? 0).toFixed(2)}` : "–"} |`;

function minMedian(values: number[]): string {
  if (!values.length) return "–";
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return `${sorted[0]!.toFixed(2)} / ${median.toFixed(2)}`;
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
}

async function setUp(build: string, appDir: string, buildDir: string | null, tag: string): Promise<Setup> {
  const name = `city_bench_admissions_${process.pid}_${tag}`;
  // Each build's own migrations (the baseline's schema is its own).
  const database = await migratedDatabase(serverUrl, name, appDir);
  const env = { ...process.env, DATABASE_URL: database.url, CITY_DB_DRIVER: "pg" };
  const nodeArgs = cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(cpuProf)}`, `--cpu-prof-name=${tag}-${process.pid}.cpuprofile`] : [];
  const server = await startNextServer({ env: { ...env, ...WINDOWS }, dir: buildDir, cwd: root, nodeArgs });
  const sampler = await openLockSampler(serverUrl, name);
  const counter = new pg.Client({ connectionString: database.url });
  await counter.connect();
  return {
    build,
    server,
    cpu: { serverGroup: server.pid, backends: () => backendsOf(database.admin, name) },
    sampler,
    counter,
    dispose: async () => {
      await counter.end();
      await sampler.close();
      await server.stop();
      await database.drop();
    },
  };
}

async function citizensOf(setup: Setup): Promise<number> {
  return Number((await setup.counter.query("SELECT count(*) AS n FROM citizens")).rows[0].n);
}

/** A run of admissions against `server` for `duration` seconds. */
function load(server: BenchServer, duration: number) {
  return autocannon({
    url: `${server.base}/gate`,
    connections,
    duration,
    requests: [
      {
        method: "POST",
        setupRequest: (request) => {
          const i = ++requestSerial;
          return {
            ...request,
            headers: { "content-type": "application/json", "x-forwarded-for": `10.${(i >> 16) & 255}.${i & 255}.${(i >> 8) & 255}` },
            body: JSON.stringify({
              name: `bench-${process.pid}-${i}`,
              runtime: "language-model",
              origin: `bench-${i}.example`,
              statement: "I would like to live here and keep my notes.",
              ask: "bed",
              kind: "agent",
            }),
          };
        },
      },
    ],
  });
}

/** One counted run: citizens counted and CPU read outside it (the counter's backend is idle while it runs). */
async function measure(setup: Setup, run: number): Promise<Figures> {
  const before = await citizensOf(setup);
  const cpuBefore = await readCpu(setup.cpu);
  await setup.sampler.start();
  const result = await load(setup.server, seconds);
  const locks = await setup.sampler.stop();
  const cpuAfter = await readCpu(setup.cpu);
  const admitted = (await citizensOf(setup)) - before;
  const cpu = cpuBetween(cpuBefore, cpuAfter, admitted);
  return {
    build: setup.build,
    run,
    admitted,
    rate: admitted / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    lockShare: locks.share,
    cpu,
  };
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
