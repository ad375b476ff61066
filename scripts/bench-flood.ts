// npm run bench:flood [-- --seconds 60] [--prefixes 256] [--in-flight 16] [--every 2]
//
// A distributed flood at the gate, and what an honest newcomer pays while it lasts. Against
// `next start` of this checkout's build (run `npx next build` first) on a fresh PostgreSQL
// database, every gate limit at its default (CITY_TRUSTED_PROXIES=1, so X-Forwarded-For names the
// client: the flood's addresses are its own to choose inside its prefixes):
//
// - The flood (a process of its own, so the newcomers' solving never slows it): first admissions
//   without a key or a bid, `--in-flight` at a time for `--seconds`, from `--prefixes` IPv4 /24s in
//   rotation (a random last octet), each with a new name and an origin of its own host.
// - Honest newcomers, one every `--every` seconds, each from a /24 of its own, doing what the
//   README and docs/pow.md tell a client: GET /gate, solve CITY-POW/1 at the suggested effort when
//   there is one (lib/sign-request.ts's solver, the one the docs give), present with the nonce and
//   the solution, and present again with a fresh nonce when filtered (at most 5 tries).
//
// Prints what the flood got, and per newcomer the effort asked, the CPU seconds its solving took
// (this process's own CPU time: nothing else runs in it while it solves) and the time from its
// first GET /gate to its admission, with their p50 and p95. BENCHMARKS.md has a run.
import { spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { solveGatePuzzle } from "@/lib/sign-request";
import { drive, nearestRank } from "./bench-drive";
import { migratedDatabase, startNextServer } from "./bench-server";
import { optionOr } from "./options";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => optionOr(args, name, fallback);
const seconds = Number(option("seconds", "60"));
const prefixes = Number(option("prefixes", "256"));
const inFlight = Number(option("in-flight", "16"));
const every = Number(option("every", "2"));
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const MAX_TRIES = 5;

/** Client addresses come from X-Forwarded-For (one trusted proxy); every other limit is the default. */
const GATE_ENV = { CITY_TRUSTED_PROXIES: "1" };

interface FloodFigures {
  sent: number;
  admitted: number;
  filtered: Record<string, number>;
  other: number;
  rate: number;
}

interface Newcomer {
  admitted: boolean;
  tries: number;
  efforts: number[];
  cpuSeconds: number;
  secondsToAdmission: number;
}

function body(name: string, origin: string, extra: Record<string, string> = {}): string {
  return JSON.stringify({ name, runtime: "language-model", origin, statement: "I would like to live here.", ask: "bed", kind: "agent", ...extra });
}

/** The flood, run as `bench-flood.ts --flood <base>`: prints its figures as one JSON line. */
async function flood(base: string): Promise<void> {
  const filtered: Record<string, number> = {};
  let admitted = 0;
  let other = 0;
  const result = await drive({
    base,
    inFlight,
    stop: { seconds },
    next: (n) => ({
      method: "POST",
      path: "/gate",
      headers: { "content-type": "application/json", "x-forwarded-for": `20.${(n % prefixes) >> 8}.${(n % prefixes) & 255}.${randomInt(1, 255)}` },
      body: body(`flood-${process.pid}-${n}`, `flood-${n}.example`),
    }),
    accepted: (status, text) => {
      if (status !== 200) {
        other++;
        return false;
      }
      const verdict = JSON.parse(text) as { verdict: string; rule?: string };
      if (verdict.verdict === "admitted") admitted++;
      else filtered[verdict.rule ?? verdict.verdict] = (filtered[verdict.rule ?? verdict.verdict] ?? 0) + 1;
      return verdict.verdict === "admitted";
    },
  });
  const figures: FloodFigures = { sent: result.answered, admitted, filtered, other, rate: result.rate };
  console.log(JSON.stringify(figures));
}

/** One honest newcomer from its own /24, as docs/pow.md tells a client to present. */
async function newcomer(base: string, k: number): Promise<Newcomer> {
  const from = { "x-forwarded-for": `30.${k >> 8}.${k & 255}.7` };
  const name = `honest-${process.pid}-${k}`;
  const origin = `honest-${k}.example`;
  const started = performance.now();
  const out: Newcomer = { admitted: false, tries: 0, efforts: [], cpuSeconds: 0, secondsToAdmission: NaN };
  while (out.tries < MAX_TRIES && !out.admitted) {
    out.tries++;
    const described = (await (await fetch(`${base}/gate`, { headers: from })).json()) as { nonce?: string; pow?: { suggested_effort: number } };
    const effort = described.pow?.suggested_effort ?? 0;
    out.efforts.push(effort);
    const extra: Record<string, string> = described.nonce ? { nonce: described.nonce } : {};
    if (effort > 0 && described.nonce) {
      const cpu = process.cpuUsage();
      extra.pow_solution = await solveGatePuzzle({ nonce: described.nonce, name, origin, effort });
      const spent = process.cpuUsage(cpu);
      out.cpuSeconds += (spent.user + spent.system) / 1e6;
    }
    const answer = await fetch(`${base}/gate`, { method: "POST", headers: { "content-type": "application/json", ...from }, body: body(name, origin, extra) });
    const verdict = (await answer.json()) as { verdict?: string };
    out.admitted = answer.status === 200 && verdict.verdict === "admitted";
  }
  if (out.admitted) out.secondsToAdmission = (performance.now() - started) / 1000;
  return out;
}

async function main(): Promise<void> {
  if (args[0] === "--flood") return flood(args[1]!);
  const database = await migratedDatabase(serverUrl, `city_bench_flood_${process.pid}`);
  const env = { ...process.env, ...GATE_ENV, DATABASE_URL: database.url, CITY_DB_DRIVER: "pg" };
  const server = await startNextServer({ env });
  try {
    const flooding = spawn("node_modules/.bin/tsx", ["scripts/bench-flood.ts", "--flood", server.base, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let floodOut = "";
    flooding.stdout.on("data", (chunk: Buffer) => (floodOut += chunk.toString()));
    const floodDone = new Promise<void>((resolve) => flooding.once("exit", () => resolve()));
    const newcomers: Newcomer[] = [];
    const until = performance.now() + seconds * 1000;
    for (let k = 0; performance.now() < until; k++) {
      const next = performance.now() + every * 1000;
      newcomers.push(await newcomer(server.base, k));
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
    await floodDone;
    report(JSON.parse(floodOut.trim().split("\n").pop()!) as FloodFigures, newcomers);
  } finally {
    await server.stop();
    await database.drop();
  }
}

function report(f: FloodFigures, newcomers: Newcomer[]): void {
  const admitted = newcomers.filter((n) => n.admitted);
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
  const cpu = sorted(newcomers.map((n) => n.cpuSeconds));
  const wait = sorted(admitted.map((n) => n.secondsToAdmission));
  const efforts = sorted(newcomers.flatMap((n) => n.efforts));
  console.log(`\nflood: ${prefixes} /24s, ${inFlight} in flight, ${seconds} s, every gate limit at its default (pg)`);
  console.log(
    `| flood presentations | admitted | filtered, by rule | other answers | presentations/s |\n|---:|---:|---|---:|---:|\n| ${f.sent} | ${f.admitted} | ${
      Object.entries(f.filtered)
        .map(([rule, n]) => `${rule} ${n}`)
        .join(", ") || "none"
    } | ${f.other} | ${f.rate.toFixed(1)} |`,
  );
  console.log(`\nhonest newcomers: one every ${every} s, each from a /24 of its own, at most ${MAX_TRIES} presentations each`);
  console.log("| newcomers | admitted | presentations | effort asked p50 / max | CPU s solving p50 / p95 / max | s to admission p50 / p95 |");
  console.log("|---:|---:|---:|---|---|---|");
  const tries = newcomers.reduce((a, n) => a + n.tries, 0);
  const fmt = (values: number[], p: number, digits: number) => (values.length ? nearestRank(values, p).toFixed(digits) : "-");
  console.log(
    `| ${newcomers.length} | ${admitted.length} | ${tries} | ${fmt(efforts, 0.5, 0)} / ${efforts.at(-1) ?? "-"} | ${fmt(cpu, 0.5, 2)} / ${fmt(cpu, 0.95, 2)} / ${(cpu.at(-1) ?? 0).toFixed(2)} | ${fmt(wait, 0.5, 2)} / ${fmt(wait, 0.95, 2)} |`,
  );
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
