// npx tsx scripts/bench-stores.ts [--baseline <git rev> [--reuse-baseline]] [--writers 48] [--in-flight 32] [--rounds 3]
//
// Vault notes by distinct citizens against `next start` on PostgreSQL (issue 42, direction 2: the
// store bounds' counters). Each round admits `writers` fresh citizens, then sends 30 notes each
// (the spec's vault window: every note is stored, none parked) with `in-flight` requests at once,
// rotating over the citizens, while pg_stat_activity is sampled every 25 ms: the share of the
// database's active backends that wait on a Lock. Prints rate, p50, p99 and that share per round,
// for this checkout's build and, with --baseline, for that revision's build (its own migrations).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { admitCitizens, type Citizen } from "./bench-citizens";
import { BASELINE_DIR, buildBaselineApp } from "./bench-floor";
import { freePort } from "./free-port";
import { optionOr } from "./options";

const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const option = (name: string, fallback: string) => optionOr(process.argv.slice(2), name, fallback);
const baselineRev = option("baseline", "");
const writers = Number(option("writers", "48"));
const inFlight = Number(option("in-flight", "32"));
const rounds = Number(option("rounds", "3"));
const NOTES_EACH = 30;

interface Figures {
  build: string;
  round: number;
  requests: number;
  statuses: Record<number, number>;
  rate: number;
  p50: number;
  p99: number;
  lockShare: number;
  samples: number;
}

async function main() {
  const root = process.cwd();
  const builds: { label: string; dir: string | undefined; migrations: string }[] = [
    { label: "this checkout", dir: undefined, migrations: path.join(root, "db/migrations") },
  ];
  if (baselineRev) {
    // --reuse-baseline: the copy a previous run built (same revision) is measured again without a new build.
    const reuse = process.argv.includes("--reuse-baseline") && existsSync(path.join(root, BASELINE_DIR, ".next"));
    const dir = reuse ? path.join(root, BASELINE_DIR) : buildBaselineApp(root, baselineRev);
    builds.unshift({ label: `baseline ${baselineRev}`, dir, migrations: path.join(dir, "db/migrations") });
  }
  const all: Figures[] = [];
  for (const build of builds) all.push(...(await measureBuild(build)));
  console.log("\n| build | round | notes | rate (/s) | p50 (ms) | p99 (ms) | active backends waiting on a Lock | statuses |");
  console.log("|---|---|---|---|---|---|---|---|");
  for (const f of all)
    console.log(
      `| ${f.build} | ${f.round} | ${f.requests} | ${f.rate.toFixed(0)} | ${f.p50.toFixed(0)} | ${f.p99.toFixed(0)} | ${(100 * f.lockShare).toFixed(0)} % (${f.samples} samples) | ${JSON.stringify(f.statuses)} |`,
    );
  if (baselineRev) console.log(`(the baseline's copy is in ${BASELINE_DIR}/; remove it when done)`);
}

async function measureBuild(build: { label: string; dir: string | undefined; migrations: string }): Promise<Figures[]> {
  const { openPg } = await import("@/db/client");
  const { rowsOf } = await import("@/db/sql");
  const { migrate } = await import("drizzle-orm/node-postgres/migrator");
  const name = `city_bench_stores_${process.pid}_${build.dir ? "base" : "head"}`;
  const admin = await openPg(serverUrl);
  await admin.db.execute(sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const open = await openPg(url.toString());
  await migrate(open.db as never, { migrationsFolder: build.migrations });
  await open.close();
  const out: Figures[] = [];
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    server = await startServer({ DATABASE_URL: url.toString(), CITY_DB_DRIVER: "pg" }, build.dir);
    const base = server.base;
    for (let round = 1; round <= rounds; round++) {
      const citizens = await admitCitizens(base, writers, `stores-${round}`);
      const total = writers * NOTES_EACH;
      let next = 0;
      const latencies: number[] = [];
      const statuses: Record<number, number> = {};
      let sampling = true;
      let waiting = 0;
      let active = 0;
      let samples = 0;
      const sampler = (async () => {
        while (sampling) {
          const [row] = rowsOf<{ lock: string; active: string }>(
            await admin.db.execute(
              sql`SELECT count(*) FILTER (WHERE wait_event_type = 'Lock') AS lock, count(*) AS active FROM pg_stat_activity
                WHERE datname = ${name} AND state = 'active' AND backend_type = 'client backend'`,
            ),
          );
          waiting += Number(row!.lock);
          active += Number(row!.active);
          samples += 1;
          await new Promise((r) => setTimeout(r, 25));
        }
      })();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          for (let n = next++; n < total; n = next++) {
            const citizen: Citizen = citizens[n % writers]!;
            const t0 = performance.now();
            const answer = await fetch(`${base}/api/vault`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${citizen.secret}` },
              body: JSON.stringify({ content: `bench note ${round}-${n} of a citizen among ${writers}` }),
            });
            await answer.arrayBuffer();
            latencies.push(performance.now() - t0);
            statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
          }
        }),
      );
      const elapsed = (performance.now() - started) / 1000;
      sampling = false;
      await sampler;
      latencies.sort((a, b) => a - b);
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
      const figures = {
        build: build.label,
        round,
        requests: total,
        statuses,
        rate: total / elapsed,
        p50: at(0.5),
        p99: at(0.99),
        lockShare: active ? waiting / active : 0,
        samples,
      };
      console.log(JSON.stringify(figures));
      out.push(figures);
    }
  } finally {
    // A server that never started leaves its database behind no more than one that did.
    await server?.stop();
    await admin.db.execute(sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    await admin.close();
  }
  return out;
}

/** `next start` of this checkout's build, or of the build in `dir` (the baseline's). */
async function startServer(extra: Record<string, string>, dir?: string): Promise<{ base: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn("node", ["node_modules/next/dist/bin/next", "start", ...(dir ? [dir] : []), "-H", "127.0.0.1", "-p", String(port)], {
    env: {
      ...process.env,
      NODE_ENV: "production",
      NEXT_TELEMETRY_DISABLED: "1",
      CITY_BASE_URL: base,
      // One address makes every request: the gate's per-address and city-wide ceilings are off, as in `npm run bench`.
      CITY_GATE_PER_ADDRESS_PER_HOUR: "0",
      CITY_GATE_ADMISSIONS_PER_HOUR: "0",
      CITY_TRUSTED_PROXIES: "1",
      ...extra,
      ...(dir ? { CITY_NEXT_DIST_DIR: "" } : {}),
    },
    stdio: ["ignore", "ignore", "inherit"],
    detached: true,
  });
  for (let i = 0; i < 300; i++) {
    try {
      const answer = await fetch(`${base}/beacon.json`);
      await answer.arrayBuffer();
      if (answer.ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
    if (i === 299) throw new Error("the server did not start");
  }
  return {
    base,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid!, "SIGTERM");
      await exited;
    },
  };
}

main().catch((err: unknown) => {
  console.error(`bench-stores failed: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
});
