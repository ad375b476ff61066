// npm run bench:admissions [-- --seconds 20] [--connections 32] [--baseline <git rev>]
// Admissions under load (issue 42): POST /gate asking for a bed, every request a new name, origin
// and client address (X-Forwarded-For through one trusted proxy), with the gate's windows on: the
// address's and the origin's, and the city-wide ceiling (high enough never to refuse, so every
// request takes it). Against `next start` of this checkout's build (run `npx next build` first) on
// a fresh PostgreSQL database, and with --baseline on the build of that revision (migrated by its
// own migrations). Prints the rate of admissions, p50 and p99, and the share of the database's
// active backends waiting on a Lock, sampled from pg_stat_activity every 50 ms while it runs.
import autocannon from "autocannon";
import pg from "pg";
import { buildBaselineApp, removeCopies } from "./bench-floor";
import { type BenchServer, migratedDatabase, startNextServer } from "./bench-server";
import { optionOr } from "./options";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => optionOr(args, name, fallback);
const seconds = Number(option("seconds", "20"));
const connections = Number(option("connections", "32"));
const baselineRev = option("baseline", "");
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
  admitted: number;
  rate: number;
  p50: number;
  p99: number;
  non2xx: number;
  lockShare: number;
}

async function main(): Promise<void> {
  const figures: Figures[] = [];
  const baselineDir = baselineRev ? buildBaselineApp(root, baselineRev) : null;
  try {
    figures.push(await measure("this checkout", root, null));
    if (baselineDir) figures.push(await measure(`baseline ${baselineRev}`, baselineDir, baselineDir));
  } finally {
    if (baselineDir) removeCopies(root);
  }
  console.log(`\nPOST /gate (ask bed), ${connections} in flight, ${seconds} s, pg`);
  console.log("| build | admitted/s | p50 ms | p99 ms | non-2xx | active backends waiting on a Lock |");
  console.log("|---|---|---|---|---|---|");
  for (const f of figures) console.log(`| ${f.build} | ${f.rate.toFixed(1)} | ${f.p50} | ${f.p99} | ${f.non2xx} | ${(f.lockShare * 100).toFixed(0)} % |`);
}

async function measure(build: string, appDir: string, buildDir: string | null): Promise<Figures> {
  const name = `city_bench_admissions_${process.pid}`;
  // Each build's own migrations (the baseline's schema is its own).
  const database = await migratedDatabase(serverUrl, name, appDir);
  const { admin, url } = database;
  const env = { ...process.env, DATABASE_URL: url, CITY_DB_DRIVER: "pg" };
  const server = await startServer(env, buildDir);
  const sampler = sampleLocks(admin, name);
  let n = 0;
  try {
    const result = await autocannon({
      url: `${server.base}/gate`,
      connections,
      duration: seconds,
      requests: [
        {
          method: "POST",
          setupRequest: (request) => {
            n += 1;
            const i = n;
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
    const share = await sampler.stop();
    const counted = new pg.Client({ connectionString: url });
    await counted.connect();
    const admitted = Number((await counted.query("SELECT count(*) AS n FROM citizens")).rows[0].n);
    await counted.end();
    return {
      build,
      admitted,
      rate: admitted / seconds,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      lockShare: share,
    };
  } finally {
    await server.stop();
    await database.drop();
  }
}

/** Samples the database's active client backends every 50 ms: the share of them waiting on a Lock. */
function sampleLocks(admin: pg.Client, database: string): { stop: () => Promise<number> } {
  let active = 0;
  let waiting = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await admin.query(
        `SELECT count(*) FILTER (WHERE state = 'active') AS active, count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock') AS waiting
         FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
        [database],
      );
      active += Number(rows[0].active);
      waiting += Number(rows[0].waiting);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return active ? waiting / active : 0;
    },
  };
}

function startServer(env: NodeJS.ProcessEnv, dir: string | null): Promise<BenchServer> {
  return startNextServer({ env: { ...env, ...WINDOWS }, dir, cwd: root });
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
