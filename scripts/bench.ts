// npm run bench [-- --citizens 1000] [--db pglite|pg|both] [--seconds 5] [--connections 32]
//                [--mixed 60] [--agents 200] [--open 30] [--shared-cache] [--smoke] [--no-floor] [--only a,b]
//                [--baseline <git rev>] [--loads 1,8,32]
// Starts the production server (next start) on PGlite and on the local PostgreSQL (pg driver, a
// fresh database), seeds a city by writing the database directly, drives each door with
// autocannon on 127.0.0.1 and prints a table; then the poll and the citizen writes (over admitted
// citizens, as ratios to GET /gate of the same run); then a mixed load of concurrent agents (closed
// loop) and the same mix open-loop at half the closed loop's rate; with --shared-cache, the public
// reads through nginx's proxy_cache (scripts/bench-cache.ts); on pg, the contention legs (the loads
// that queue on one row for the whole city, at 1, 8 and 32 in flight, with the share of backends
// waiting on a Lock: scripts/bench-contention.ts). The smoke run (small city, PGlite
// only, a fixed number of requests per door instead of seconds at full load, so it costs CI little
// CPU) fails on any 5xx or an empty table: CI runs it.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import type pg from "pg";
import { runCacheLeg } from "./bench-cache";
import { backendsOf, type CpuPerRequest, type CpuSources, cpuSince, readCpu } from "./bench-cpu";
import { baselineApp, buildFloorApp, FLOOR_PATH, removeCopies } from "./bench-floor";
import { admitCitizens, bringBack, CITIZEN_LEGS, type CitizenLeg, legRequest } from "./bench-citizens";
import {
  CITIZENS_AT_ONCE,
  CONTENTION_ENV,
  CONTENTION_LOADS,
  type ContentionBuild,
  type ContentionRow,
  contentionLegs,
  contentionSettings,
  contentionTables,
  formatContentionRow,
  runContention,
} from "./bench-contention";
import { openLockSampler } from "./bench-locks";
import { runMixedLoad, runOpenLoad } from "./bench-mixed";
import { seedCity } from "./bench-seed";
import { madePgliteFolder } from "@/tests/support/template-folder";
import { optionOr } from "./options";
import { type BenchServer, migratedDatabase, startNextServer } from "./bench-server";

// The log's origin is kept in the database with its tree (lib/city/logs/residency-log/identity.ts): the seed appends
// in this process and the server runs on a port chosen later, so both name one fixed origin.
const BENCH_LOG_ORIGIN = "bench.city.test/residency-log";
process.env.CITY_LOG_ORIGIN = BENCH_LOG_ORIGIN;
// The identity log likewise (a citizen admitted with a controller key appends to it): every server, on its own port, names one.
const BENCH_IDENTITY_LOG_ORIGIN = "bench.city.test/identity-log";
process.env.CITY_IDENTITY_LOG_ORIGIN = BENCH_IDENTITY_LOG_ORIGIN;

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const option = (name: string, fallback: string) => optionOr(args, name, fallback);

if (flag("help") || args.includes("-h")) {
  console.log(`npm run bench [-- --citizens 1000] [--db pglite|pg|both] [--seconds 5] [--connections 32]
               [--mixed 60] [--agents 200] [--open 30] [--shared-cache] [--smoke] [--no-floor] [--only a,b]
               [--baseline <git rev>] [--loads 1,8,32]
--no-floor: skip the throwaway build of the bare-handler floor (the smoke run never makes it).
--only: measure only the doors, citizen legs and contention legs whose label holds one of these
texts (the static file, the floor and GET /gate are always measured; no mixed or open loop).
"--only contention" keeps the contention legs alone.
--baseline <rev>: also build the app at that git revision and measure GET /gate, each citizen leg
and each contention leg on it right after this checkout's, in the same run and on the same
database; the contention legs get a ratio table (this build to the baseline's).
--keep-baseline: keep the baseline's built copy (.next-bench-baseline/) after the run;
--reuse-baseline: measure a kept copy of the same revision instead of building it again.
--loads 1,8,32: the requests in flight of each contention leg (pg only; closed loop, --seconds each
after a 1 s warm-up). The legs: GET /gate; POST /api/vault by ${CITIZENS_AT_ONCE} citizens at once with their
Bearer; POST /gate admissions (ask bed); the same vault write signed with each citizen's controller
key (CITY-SIG/1); GET /api/vault, a read-only control. Each reports req/s, p50, p99, refusals (non-2xx,
a filtered verdict, a parked write), CPU per request and the share of the database's active
backends waiting on a Lock (pg_stat_activity, sampled every 50 ms). Their servers run with
${Object.entries(CONTENTION_ENV)
  .map(([k, v]) => `${k}=${v}`)
  .join(" ")}
and every request comes from an X-Forwarded-For address of its own. The smoke run (PGlite) runs
the signed write alone, 40 requests at 4 in flight, over 8 citizens.
The method and the figures are in BENCHMARKS.md.`);
  process.exit(0);
}

const smoke = flag("smoke");
const citizens = Number(option("citizens", smoke ? "200" : "1000"));
const seconds = Number(option("seconds", smoke ? "1" : "5"));
const connections = Number(option("connections", "32"));
const mixedSeconds = Number(option("mixed", smoke ? "3" : "60"));
const agents = Number(option("agents", smoke ? "20" : "200"));
const openSeconds = Number(option("open", smoke ? "2" : "30"));
// The smoke run sends this many requests per door (autocannon's `amount`) rather than `seconds` of them.
const SMOKE_REQUESTS = 40;
const load = () => (smoke ? { connections: 4, amount: SMOKE_REQUESTS } : { connections, duration: seconds });
const sharedCache = flag("shared-cache");
// The bare-handler floor needs a second build (scripts/bench-floor.ts): not in the smoke run.
const withFloor = !smoke && !flag("no-floor");
const baselineRev = smoke ? "" : option("baseline", "");
const only = option("only", "")
  .split(",")
  .map((part) => part.trim())
  .filter(Boolean);
const ALWAYS = new Set(["/robots.txt", "/gate"]);
const wanted = (label: string) => only.length === 0 || ALWAYS.has(label) || only.some((part) => label.includes(part));
const contentionLoads = smoke
  ? [4]
  : option("loads", CONTENTION_LOADS.join(","))
      .split(",")
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
const databases = smoke ? ["pglite"] : option("db", "both") === "both" ? ["pglite", "pg"] : [option("db", "both")];
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

interface Row {
  db: string;
  path: string;
  rps: number;
  ratio: number;
  toGate: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  bytes: number;
  queries: string;
  cpu: CpuPerRequest | null;
  /** Measured on the --baseline build. */
  baseline?: boolean;
  /** CPU per request (server and database) as a ratio to GET /gate's of the same run. */
  cpuToGate: number;
}

const DOORS: { path: string; headers?: Record<string, string>; note?: string }[] = [
  { path: "/robots.txt", note: "static file" },
  { path: "/.well-known/ai.json" },
  { path: "/schemas/ai-discovery/1.json" },
  { path: "/llms.txt" },
  { path: "/openapi.json" },
  { path: "/city-card.json" },
  { path: "/.well-known/agent-card.json" },
  { path: "/.well-known/jwks.json" },
  { path: "/contact" },
  { path: "/city.json" },
  { path: "/beacon.json" },
  { path: "/api/peers" },
  { path: "/api/residency/log" },
  { path: "/api/hospital" },
  { path: "/gate" },
];

async function main(): Promise<void> {
  if (!existsSync(".next/BUILD_ID")) {
    console.log("no production build: running next build");
    const built = spawnSync("node", ["node_modules/next/dist/bin/next", "build"], { stdio: "inherit" });
    if (built.status !== 0) throw new Error("next build failed");
  }
  const perDoor = smoke ? `${SMOKE_REQUESTS} requests per door at 4 connections` : `${seconds} s per door at ${connections} connections`;
  console.log(`bench: ${citizens} citizens, ${perDoor}, mixed ${agents} agents for ${mixedSeconds} s`);
  const floorDir = withFloor ? buildFloorApp(process.cwd()) : null;
  const baselineDir = baselineRev ? baselineApp(process.cwd(), baselineRev, flag("reuse-baseline")) : null;
  const rows: Row[] = [];
  const contention: ContentionRow[] = [];
  const mixed: string[] = [];
  let failures = 0;
  const counted = (row: Row & { non2xx5xx: number }) => {
    rows.push(row);
    console.log(formatRow(row));
    failures += row.non2xx5xx;
  };
  try {
    for (const db of databases) {
      const city = await prepareDatabase(db);
      try {
        failures += await measureDatabase(db, city, { floorDir, baselineDir }, counted, mixed);
        failures += await measureContention(db, city, baselineDir, contention);
      } finally {
        await city.dispose();
      }
      relateToStaticAndGate(rows.filter((r) => r.db === db && !r.baseline));
      relateToStaticAndGate(rows.filter((r) => r.db === db && r.baseline));
    }
  } finally {
    // --keep-baseline keeps the baseline's copy whether or not the floor's is removed.
    if (floorDir || (baselineDir && !flag("keep-baseline"))) removeCopies(process.cwd(), { keepBaseline: flag("keep-baseline") });
  }
  console.log(
    `\n| db | path | req/s | ratio to static | ratio to GET /gate | p50 ms | p99 ms | errors | non-2xx | bytes/req | db round trips | server CPU ms/req | PostgreSQL CPU ms/req | CPU ms/req | CPU to GET /gate |`,
  );
  console.log(`|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|`);
  for (const r of rows)
    console.log(
      `| ${r.db} | ${r.path} | ${r.rps.toFixed(0)} | ${r.ratio.toFixed(2)} | ${r.toGate.toFixed(2)} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} | ${r.bytes} | ${r.queries} | ${cpuColumns(r)} |`,
    );
  console.log(`\nmixed load (${agents} agents, ${mixedSeconds} s closed loop; then open loop for ${openSeconds} s at half its rate):`);
  for (const line of mixed) console.log(`- ${line}`);
  if (contention.length) {
    console.log(`\ncontention legs (${contentionSettings(smoke ? SMOKE_CITIZENS_AT_ONCE : CITIZENS_AT_ONCE)}):\n`);
    for (const line of contentionTables(contention)) console.log(line);
  }
  if (smoke && (failures > 0 || rows.some((r) => r.rps <= 0) || contention.some((r) => r.result.accepted <= 0))) {
    console.error(`bench smoke: ${failures} server errors or lost writes, or a door served nothing, or a contention leg stored nothing`);
    process.exit(1);
  }
}

/** One database's legs: the floor, the doors, the mixed load, the citizen legs and the open loop. Returns the failures. */
async function measureDatabase(
  db: string,
  city: PreparedCity,
  { floorDir, baselineDir }: { floorDir: string | null; baselineDir: string | null },
  counted: (row: Row & { non2xx5xx: number }) => void,
  mixed: string[],
) {
  let failures = 0;
  const cpuOf = (server: { pid: number }): CpuSources => ({ serverGroup: server.pid, backends: city.backends });
  if (floorDir) {
    const floor = await startServer(db, city.env, floorDir);
    try {
      counted(await measure(db, floor.base, FLOOR_PATH, cpuOf(floor), {}, `GET ${FLOOR_PATH} (floor: a constant, throwaway build)`));
      // The floor of a POST door: the same constant after reading a JSON body the size of a poll's.
      const post = { method: "POST" as const, body: JSON.stringify({ action: "return" }) };
      counted(await measure(db, floor.base, FLOOR_PATH, cpuOf(floor), { "content-type": "application/json" }, `POST ${FLOOR_PATH} (floor)`, post));
    } finally {
      await floor.stop();
    }
  }
  const server = await startServer(db, city.env);
  try {
    for (const door of withPollVariant(DOORS, server.base).filter((d) => wanted(d.label ?? d.path))) {
      counted(await measure(db, server.base, door.path, cpuOf(server), door.headers, door.label));
    }
    const report = only.length ? null : await runMixedLoad({ base: server.base, agents, seconds: mixedSeconds });
    await server.stop();
    if (report) {
      const after = await city.count();
      const lost = lostWrites(city.before, after, report.accepted);
      mixed.push(`${db}: ${report.summary}; rows written minus accepted answers: ${lost.text}`);
      console.log(`mixed ${db}: ${mixed.at(-1)}`);
      failures += report.serverErrors + lost.total;
    }
    // The citizen legs write outside that account: on a server started again after the count.
    const again = await startServer(db, city.env);
    // The citizen legs use one set of citizens on both builds: only a baseline of this schema can serve them.
    const baseline = baselineDir && sameSchema(baselineDir) ? await startServer(db, city.env, baselineDir) : null;
    if (baselineDir && !baseline)
      console.log(`the baseline's schema is not this checkout's: its GET /gate and citizen legs are not measured, only its contention legs`);
    try {
      // No citizen leg, open loop nor cache leg wanted (--only contention): no citizens to admit.
      const needCitizens = CITIZEN_LEGS.some((l) => wanted(l.label)) || report !== null || sharedCache;
      const benchCitizens = needCitizens ? await admitCitizens(again.base, smoke ? 8 : 64, `bench-${db}`) : [];
      if (baseline) {
        // The yardstick of each build, measured side by side before their legs.
        for (const [server, tag] of [
          [again, ""],
          [baseline, ` [baseline ${baselineRev}]`],
        ] as const) {
          const row = await measure(db, server.base, "/gate", cpuOf(server), {}, `/gate${tag || " (beside the baseline)"}`);
          row.baseline = tag !== "";
          counted(row);
        }
      }
      for (const leg of CITIZEN_LEGS.filter((l) => wanted(l.label))) {
        counted(await measureLeg(db, again.base, leg, benchCitizens, cpuOf(again)));
        if (!baseline) continue;
        // Each leg that moves citizens out and back leaves them as it found them: bring them back first.
        await bringBack(again.base, benchCitizens);
        const row = await measureLeg(db, baseline.base, leg, benchCitizens, cpuOf(baseline), 10_000_000);
        row.path += ` [baseline ${baselineRev}]`;
        row.baseline = true;
        counted(row);
      }
      await bringBack(again.base, benchCitizens);
      if (report) {
        const open = await runOpenLoad({ base: again.base, rate: Math.max(1, Math.round(report.rps / 2)), seconds: openSeconds, citizens: benchCitizens });
        mixed.push(`${db} open loop: ${open.summary}`);
        console.log(`open ${db}: ${open.summary}`);
        failures += open.serverErrors;
      }
      if (sharedCache) {
        const cached = await runCacheLeg({ base: again.base, seconds, connections, citizens: benchCitizens });
        for (const line of cached.lines) mixed.push(`${db} shared cache: ${line}`);
        cached.lines.forEach((l) => console.log(`cache ${db}: ${l}`));
        failures += cached.failures;
      }
    } finally {
      await again.stop();
      await baseline?.stop();
    }
  } finally {
    await server.stop();
  }
  return failures;
}

/** The smoke run's contention leg rotates over this many citizens (48 in the full run). */
const SMOKE_CITIZENS_AT_ONCE = 8;

/**
 * The contention legs on their own servers (this build's and the baseline's, started with
 * CONTENTION_ENV) after the rest of the database's legs: on pg, where the lock sampler reads
 * pg_stat_activity; in the smoke run (PGlite) the signed write alone, small. Returns the failures.
 */
async function measureContention(db: string, city: PreparedCity, baselineDir: string | null, out: ContentionRow[]): Promise<number> {
  const group = smoke ? SMOKE_CITIZENS_AT_ONCE : CITIZENS_AT_ONCE;
  const legs = contentionLegs(group).filter((leg) => wanted(leg.label) && (!smoke || leg.label.includes("signed")));
  if (legs.length === 0 || contentionLoads.length === 0 || (db !== "pg" && !smoke)) return 0;
  console.log(`\n${contentionSettings(group)}`);
  const env = { ...city.env, ...CONTENTION_ENV };
  const current = await startServer(db, env);
  // A baseline of another schema gets a database of its own, migrated by its own migrations.
  const own = baselineDir && !sameSchema(baselineDir) && city.database ? await baselineDatabase(city.database, baselineDir) : null;
  const baseline = baselineDir ? await startServer(db, own ? { ...env, DATABASE_URL: own.url } : env, baselineDir) : null;
  const sampler = city.database ? await openLockSampler(serverUrl, city.database) : null;
  try {
    const cpuOf = (server: { pid: number }): CpuSources => ({ serverGroup: server.pid, backends: city.backends });
    const builds: ContentionBuild[] = [{ rev: "", base: current.base, cpu: cpuOf(current) }];
    if (baseline && own)
      builds.push({ rev: baselineRev, base: baseline.base, cpu: { serverGroup: baseline.pid, backends: own.backends }, sampler: own.sampler });
    else if (baseline) builds.push({ rev: baselineRev, base: baseline.base, cpu: cpuOf(baseline) });
    const rows = await runContention({
      db,
      builds,
      legs,
      loads: contentionLoads,
      stop: smoke ? { amount: SMOKE_REQUESTS } : { seconds },
      sampler,
      onRow: (row) => console.log(formatContentionRow(row)),
    });
    out.push(...rows);
    return rows.reduce((sum, row) => sum + row.result.serverErrors, 0);
  } finally {
    await sampler?.close();
    await current.stop();
    await baseline?.stop();
    await own?.dispose();
  }
}

/** Whether a baseline's migrations are this checkout's: then it can share this run's database. */
function sameSchema(baselineDir: string): boolean {
  const journal = (root: string) => readFileSync(path.join(root, "db/migrations/meta/_journal.json"), "utf8");
  return journal(baselineDir) === journal(process.cwd());
}

/**
 * A database for the baseline's contention legs, beside this run's (pg), migrated by the
 * baseline's own migrations: a baseline of another schema cannot serve this checkout's tables
 * (its statements name columns they no longer have, or miss ones they need).
 */
async function baselineDatabase(database: string, baselineDir: string) {
  const name = `${database}_baseline`;
  const { url, admin, drop } = await migratedDatabase(serverUrl, name, baselineDir);
  console.log(`the baseline's schema is not this checkout's: its contention legs run on ${name}, migrated by its own migrations`);
  const sampler = await openLockSampler(serverUrl, name);
  return {
    url,
    sampler,
    backends: () => backendsOf(admin, name),
    dispose: async () => {
      await sampler.close();
      await drop();
    },
  };
}

/** The ratios of one database's rows: req/s to the static file's and to GET /gate's, CPU per request to GET /gate's. */
function relateToStaticAndGate(rows: Row[]): void {
  const staticRow = rows.find((r) => r.path === "/robots.txt");
  // With a baseline, each build's yardstick is its GET /gate measured side by side in the citizen phase.
  const gate = rows.find((r) => r.path.startsWith("/gate ")) ?? rows.find((r) => r.path === "/gate");
  const gateCpu = gate?.cpu ? gate.cpu.server + (gate.cpu.database ?? 0) : 0;
  for (const row of rows) {
    row.ratio = staticRow?.rps ? row.rps / staticRow.rps : 0;
    row.toGate = gate?.rps ? row.rps / gate.rps : 0;
    row.cpuToGate = row.cpu && gateCpu ? (row.cpu.server + (row.cpu.database ?? 0)) / gateCpu : 0;
  }
}

function cpuColumns(r: Row): string {
  if (!r.cpu) return "– | – | – | –";
  const database = r.cpu.database === null ? "in server" : r.cpu.database.toFixed(2);
  return `${r.cpu.server.toFixed(2)} | ${database} | ${(r.cpu.server + (r.cpu.database ?? 0)).toFixed(2)} | ${r.cpuToGate ? r.cpuToGate.toFixed(2) : "–"}`;
}

/** The directory polled with the ETag of its last answer: what an agent polling an unchanged page costs. */
function withPollVariant(doors: typeof DOORS, _base: string) {
  const list: { path: string; headers?: Record<string, string>; label?: string }[] = [...doors];
  list.push({ path: "/api/peers", headers: { "if-none-match": "{etag}" }, label: "/api/peers (If-None-Match: 304)" });
  return list;
}

async function measure(
  db: string,
  base: string,
  pathName: string,
  cpu: CpuSources,
  headers: Record<string, string> = {},
  label?: string,
  request: { method: "GET" | "POST"; body?: string } = { method: "GET" },
): Promise<Row & { non2xx5xx: number }> {
  // The first answer may build a constant document; the second shows the steady round trips.
  await (await fetch(base + pathName, { ...request, headers })).arrayBuffer();
  const probe = await fetch(base + pathName, { ...request, headers });
  const queries = probe.headers.get("x-city-queries") ?? "static";
  const etag = probe.headers.get("etag") ?? "";
  await probe.arrayBuffer();
  const sent = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.replace("{etag}", etag)]));
  if (!smoke) await autocannon({ url: base + pathName, connections, duration: 1, headers: sent, ...request }); // warm-up, not counted
  const before = await readCpu(cpu);
  const result = await autocannon({ url: base + pathName, ...load(), headers: sent, ...request });
  const row = rowOf(db, label ?? pathName, result, label?.includes("304") ? `${queries} (then 304)` : queries);
  row.cpu = await cpuSince(before, cpu, result.requests.total);
  return row;
}

/** One table row from one autocannon run (ratios are filled in once the whole table is measured). */
function rowOf(db: string, label: string, result: autocannon.Result, queries: string): Row & { non2xx5xx: number } {
  return {
    db,
    path: label,
    rps: result.requests.average,
    ratio: 0,
    toGate: 0,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    bytes: result.requests.total ? Math.round(result.throughput.total / result.requests.total) : 0,
    queries,
    cpu: null,
    cpuToGate: 0,
    non2xx5xx: result["5xx"] + result.errors,
  };
}

/** A citizen leg: requests rotate over the admitted citizens; the round trips are read from a probe. */
async function measureLeg(
  db: string,
  base: string,
  leg: CitizenLeg,
  citizens: import("./bench-citizens").Citizen[],
  cpu: CpuSources,
  firstRequest = 0,
): Promise<Row & { non2xx5xx: number }> {
  // The n-th request names its admission (admit-<pid>-<n>): a second build's leg starts elsewhere.
  let n = firstRequest;
  const probe = legRequest(leg, citizens, n++);
  const probed = await fetch(base + leg.path, { method: leg.method, headers: probe.headers, body: probe.body });
  const queries = probed.headers.get("x-city-queries") ?? "?";
  await probed.arrayBuffer();
  const run = (options: { connections: number; duration: number } | { connections: number; amount: number }) =>
    autocannon({
      url: base + leg.path,
      ...options,
      requests: [
        {
          method: leg.method,
          setupRequest: (request) => {
            const next = legRequest(leg, citizens, n++);
            return { ...request, method: leg.method, headers: { ...request.headers, ...next.headers }, body: next.body } as typeof request;
          },
        },
      ],
    });
  if (!smoke) await run({ connections, duration: 1 }); // warm-up, not counted
  const before = await readCpu(cpu);
  const result = await run(load());
  const row = rowOf(db, leg.label, result, `${queries} (${leg.method === "POST" ? probed.status : "read"})`);
  row.cpu = await cpuSince(before, cpu, result.requests.total);
  return row;
}

function formatRow(r: Row): string {
  const cpu = r.cpu ? `  CPU ms/req server ${r.cpu.server.toFixed(2)} db ${r.cpu.database === null ? "in server" : r.cpu.database.toFixed(2)}` : "";
  return `${r.db.padEnd(6)} ${r.path.padEnd(36)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.errors}  non-2xx ${r.non2xx}  ${r.bytes} B  queries ${r.queries}${cpu}`;
}

/** Every accepted write is a row, and no row appeared without an accepted answer. */
function lostWrites(before: Record<string, number>, after: Record<string, number>, accepted: Record<string, number>) {
  const parts = Object.keys(accepted).map((table) => [table, after[table]! - before[table]! - accepted[table]!] as const);
  return { total: parts.reduce((sum, [, d]) => sum + Math.abs(d), 0), text: parts.map(([t, d]) => `${t} ${d}`).join(", ") };
}

interface PreparedCity {
  env: Record<string, string>;
  before: Record<string, number>;
  count: () => Promise<Record<string, number>>;
  dispose: () => Promise<void>;
  /** The bench's database on the PostgreSQL server (pg only), for the lock sampler. */
  database?: string;
  /** The PostgreSQL backends serving the bench's database (pg only), for the CPU columns. */
  backends?: () => Promise<number[]>;
}

async function prepareDatabase(db: string): Promise<PreparedCity> {
  const { openPg, openPglite } = await import("@/db/client");
  const { upgradeDatabase } = await import("@/lib/city/upgrade");
  if (db === "pglite") {
    const dir = mkdtempSync(path.join(tmpdir(), "city-bench-"));
    // Under `npm test`, a copy of the run's migrated PGlite when the run has made it (as the MCP
    // conformance city and the test servers start), so the smoke run does not migrate a folder of
    // its own; upgradeDatabase below then finds nothing to do.
    const migrated = madePgliteFolder();
    if (migrated) cpSync(migrated, dir, { recursive: true });
    const open = await openPglite(dir);
    await upgradeDatabase(open);
    const started = Date.now();
    await seedCity(open.db, citizens);
    console.log(`seeded pglite with ${citizens} citizens in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const before = await countRows(open.db);
    await open.close();
    // PGlite has one opener: counts are read after the server has stopped.
    return {
      env: { CITY_DATA_DIR: dir },
      before,
      count: async () => {
        const again = await openPglite(dir);
        try {
          return await countRows(again.db);
        } finally {
          await again.close();
        }
      },
      dispose: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `city_bench_${process.pid}`;
  const database = await migratedDatabase(serverUrl, name);
  const open = await openPg(database.url);
  const started = Date.now();
  await seedCity(open.db, citizens);
  console.log(`seeded pg with ${citizens} citizens in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const before = await countRows(open.db);
  return {
    env: { DATABASE_URL: database.url, CITY_DB_DRIVER: "pg" },
    database: name,
    before,
    count: () => countRows(open.db),
    backends: () => backendsOf(database.admin, name),
    dispose: async () => {
      await open.close();
      await database.drop();
    },
  };
}

async function countRows(db: import("@/db/client").Database): Promise<Record<string, number>> {
  const { sql } = await import("drizzle-orm");
  const { rowsOf } = await import("@/db/sql");
  const result = await db.execute(sql`SELECT
    (SELECT count(*)::int FROM citizens) AS citizens,
    (SELECT count(*)::int FROM messages) AS messages,
    (SELECT count(*)::int FROM posts) AS posts,
    (SELECT count(*)::int FROM locker_bags) AS bags`);
  return rowsOf<Record<string, number>>(result)[0]!;
}

/** `next start` of the app's build, or of the build in `dir` (the floor's). */
async function startServer(_db: string, extra: Record<string, string>, dir?: string): Promise<BenchServer> {
  // BENCH_CPU_PROF=<folder>: the server writes a V8 CPU profile there when it stops (BENCHMARKS.md: where the poll's time goes).
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  return startNextServer({
    dir: dir ?? null,
    nodeArgs: profile,
    env: {
      ...process.env,
      CITY_LOG_ORIGIN: BENCH_LOG_ORIGIN,
      CITY_IDENTITY_LOG_ORIGIN: BENCH_IDENTITY_LOG_ORIGIN,
      CITY_COUNT_QUERIES: "1",
      // The bench is one address making thousands of requests: the gate's per-address and
      // city-wide ceilings are off, as they would be for a load test behind a trusted proxy.
      CITY_GATE_PER_ADDRESS_PER_HOUR: "0",
      CITY_GATE_ADMISSIONS_PER_HOUR: "0",
      CITY_TRUSTED_PROXIES: "1",
      DATABASE_URL: "",
      ...extra,
    },
  });
}

main().catch((err: unknown) => {
  console.error(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
});
