// npm run bench:flood [-- --legs plain,bid] [--seconds 60] [--bid-seconds 240] [--prefixes 256] [--in-flight 16]
//                     [--every 2] [--flood-processes 1] [--keyed-every 5] [--step 30]
//
// A distributed flood at the gate, and what an honest newcomer pays while it lasts. Against
// `next start` of this checkout's build (run `npx next build` first), each leg on a fresh
// PostgreSQL database and server of its own, every gate limit at its default (CITY_TRUSTED_PROXIES=1,
// so X-Forwarded-For names the client: the flood's addresses are its own to choose inside its prefixes):
//
// - Leg `plain` (`--seconds`): the flood (a process of its own, so the newcomers' solving never
//   slows it) sends first admissions without a key or a bid, `--in-flight` at a time, from
//   `--prefixes` IPv4 /24s in rotation (a random last octet), each with a new name and an origin of its own host.
// - Leg `bid` (`--bid-seconds`): the same flood, but each presentation does what an honest client
//   does (GET /gate, solve CITY-POW/1 at the suggested effort with lib/sign-request.ts's solver,
//   present), so it competes for the bids' part of the window (scripts/bench-flood-bid.ts), in
//   `--flood-processes` processes of its own. Every `--keyed-every`-th newcomer presents with a key
//   instead, in turn a fresh controller key signing the nonce (it bids like anyone) and that signed
//   with the bound key of a citizen admitted before the flood and dated a day back, so settled
//   (CITY-SIG/1: no work, not stepped, the reserve in reach).
// - In both, honest newcomers, one every `--every` seconds, each from a /24 of its own, doing what
//   the README and docs/pow.md tell a client (scripts/bench-flood-gate.ts newcomer): GET /gate,
//   solve at the suggested effort when there is one, present; present again on a fresh nonce when a
//   refusal names an effort (at most 5 tries), and stop when it names none (it would wait Retry-After).
//   The bid leg ends with one newcomer of each kind more, when the flood has had its time.
//
// CPU is accounted by process: the flood's solving and whole CPU in its own process(es), the
// newcomers' solving in this one (nothing else runs in it while it solves: the search is
// synchronous), the server's from /proc (its process group). Prints the figures as tables,
// the load average beside them (the machine may be shared). BENCHMARKS.md has a run.
import { spawn } from "node:child_process";
import pg from "pg";
import { randomInt } from "node:crypto";
import { loadavg } from "node:os";
import { drive, nearestRank } from "./bench-drive";
import { readCpu } from "./bench-cpu";
import { type BidFloodFigures, biddingFlood, mergeFloods, reportBid } from "./bench-flood-bid";
import { controllerFields, gateNonce, MAX_TRIES, type Newcomer, type NewcomerKind, newcomer, presentationBody, readVerdict } from "./bench-flood-gate";
import { migratedDatabase, startNextServer } from "./bench-server";
import { optionOr } from "./options";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => optionOr(args, name, fallback);
const seconds = Number(option("seconds", "60"));
const bidSeconds = Number(option("bid-seconds", "240"));
const prefixes = Number(option("prefixes", "256"));
const inFlight = Number(option("in-flight", "16"));
const every = Number(option("every", "2"));
const floodProcesses = Number(option("flood-processes", "1"));
const keyedEvery = Number(option("keyed-every", "5"));
const step = Number(option("step", "30"));
const legs = option("legs", "plain,bid").split(",") as Leg[];
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

type Leg = "plain" | "bid";

/** Client addresses come from X-Forwarded-For (one trusted proxy); every other limit is the default. */
const GATE_ENV = { CITY_TRUSTED_PROXIES: "1" };

interface FloodFigures {
  sent: number;
  admitted: number;
  filtered: Record<string, number>;
  other: number;
  rate: number;
}

/** The flood without bids, run as `bench-flood.ts --flood <base> --mode plain`: prints its figures as one JSON line. */
async function flood(base: string): Promise<FloodFigures> {
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
      body: presentationBody(`flood-${process.pid}-${n}`, `flood-${n}.example`),
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
  return { sent: result.answered, admitted, filtered, other, rate: result.rate };
}

/** A flood process (`--flood <base> --mode plain|bid --leg-start <epoch ms>`): its figures as one JSON line. */
async function floodProcess(base: string): Promise<void> {
  const figures =
    option("mode", "plain") === "bid"
      ? await biddingFlood({ base, seconds: bidSeconds, inFlight, prefixes, legStart: Number(option("leg-start", String(Date.now()))), step })
      : await flood(base);
  console.log(JSON.stringify(figures));
}

/** Starts a flood process and resolves to the figures it prints. */
function spawnFlood(base: string, mode: Leg, legStart: number): Promise<unknown> {
  const child = spawn("node_modules/.bin/tsx", ["scripts/bench-flood.ts", "--flood", base, ...args, "--mode", mode, "--leg-start", String(legStart)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  // Resolves either way (an error as its value), so a flood that died never leaves the server running: runLeg throws it after.
  return new Promise((resolve) =>
    child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : resolve(new Error(`a flood process exited ${code}`)))),
  );
}

/**
 * A citizen admitted with a controller key before the flood (its open share is free), then dated a
 * day back, as a settled citizen of a city that has lived a day: the key signed newcomers are
 * vouched for with (a newcomer's signature would be a bid served in steps, like a solution).
 */
async function admitSponsor(base: string, databaseUrl: string): Promise<Uint8Array> {
  const seed = crypto.getRandomValues(new Uint8Array(32));
  const from = { "x-forwarded-for": "40.0.0.7" };
  const { nonce } = await gateNonce(base, from);
  const name = `sponsor-${process.pid}`;
  const body = presentationBody(name, "sponsor.example", { nonce: nonce!, ...(await controllerFields(nonce!, seed)) });
  const verdict = await readVerdict(await fetch(`${base}/gate`, { method: "POST", headers: { "content-type": "application/json", ...from }, body }));
  if (!verdict.admitted) throw new Error(`admitting the sponsor citizen: ${verdict.rule}`);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("UPDATE citizens SET bound_at = bound_at - interval '25 hours' WHERE name = $1", [name]);
  } finally {
    await client.end();
  }
  return seed;
}

/** The newcomers of the k-th arrival in a leg: keyless, or in the bid leg every keyed-every-th a keyed or signed one in turn. */
function kindOf(leg: Leg, k: number): NewcomerKind {
  if (leg !== "bid" || keyedEvery <= 0 || k % keyedEvery !== keyedEvery - 1) return "keyless";
  return Math.floor(k / keyedEvery) % 2 === 0 ? "keyed" : "signed";
}

async function runLeg(leg: Leg): Promise<void> {
  const database = await migratedDatabase(serverUrl, `city_bench_flood_${leg}_${process.pid}`);
  const env = { ...process.env, ...GATE_ENV, DATABASE_URL: database.url, CITY_DB_DRIVER: "pg" };
  const server = await startNextServer({ env }).catch(async (err: unknown) => {
    await database.drop();
    throw err;
  });
  try {
    const sponsorSeed = leg === "bid" ? await admitSponsor(server.base, database.url) : undefined;
    const load = loadavg();
    const serverCpu = await readCpu({ serverGroup: server.pid });
    const legStart = performance.now();
    const legStartEpoch = Date.now();
    const floods = Array.from({ length: leg === "bid" ? floodProcesses : 1 }, () => spawnFlood(server.base, leg, legStartEpoch));
    const newcomers: Newcomer[] = [];
    const until = legStart + (leg === "bid" ? bidSeconds : seconds) * 1000;
    for (let k = 0; performance.now() < until; k++) {
      const next = performance.now() + every * 1000;
      const kind = kindOf(leg, k);
      const address = `${kind === "keyless" ? 30 : 31}.${k >> 8}.${k & 255}.7`;
      newcomers.push(await newcomer(server.base, k, { kind, address, legStart, ...(sponsorSeed ? { sponsorSeed } : {}) }));
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
    // The bid leg ends with one newcomer of each kind, the keyless reach full: who still gets in.
    for (const [i, kind] of (leg === "bid" ? (["keyless", "keyed", "signed"] as const) : []).entries()) {
      const k = newcomers.length + i;
      newcomers.push(await newcomer(server.base, k, { kind, address: `32.${k >> 8}.${k & 255}.7`, legStart, ...(sponsorSeed ? { sponsorSeed } : {}) }));
    }
    const figures = await Promise.all(floods);
    const died = figures.find((f) => f instanceof Error);
    if (died) throw died;
    const serverAfter = await readCpu({ serverGroup: server.pid });
    const context = { load, loadAfter: loadavg(), serverCpuSeconds: serverCpu && serverAfter ? (serverAfter.server - serverCpu.server) / 1000 : null };
    if (leg === "plain") reportPlain(figures[0] as FloodFigures, newcomers, context);
    else reportBid(mergeFloods(figures as BidFloodFigures[]), newcomers, { ...context, prefixes, inFlight, floodProcesses, seconds: bidSeconds, every, step });
  } finally {
    await server.stop();
    await database.drop();
  }
}

async function main(): Promise<void> {
  if (args[0] === "--flood") return floodProcess(args[1]!);
  for (const leg of legs) {
    if (leg !== "plain" && leg !== "bid") throw new Error(`no leg ${leg}: plain or bid`);
    await runLeg(leg);
  }
}

interface LegContext {
  load: number[];
  loadAfter: number[];
  serverCpuSeconds: number | null;
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const fmt = (values: number[], p: number, digits: number) => (values.length ? nearestRank(values, p).toFixed(digits) : "-");
const loads = (c: LegContext) =>
  `load average ${c.load.map((l) => l.toFixed(2)).join(" / ")} at the start, ${c.loadAfter.map((l) => l.toFixed(2)).join(" / ")} at the end`;
const byRule = (filtered: Record<string, number>) =>
  Object.entries(filtered)
    .map(([rule, n]) => `${rule} ${n}`)
    .join(", ") || "none";

function reportPlain(f: FloodFigures, newcomers: Newcomer[], c: LegContext): void {
  const admitted = newcomers.filter((n) => n.admitted);
  const cpu = sorted(newcomers.map((n) => n.cpuSeconds));
  const wait = sorted(admitted.map((n) => n.secondsToAdmission));
  const efforts = sorted(newcomers.flatMap((n) => n.efforts));
  console.log(`\nleg plain. flood: ${prefixes} /24s, ${inFlight} in flight, ${seconds} s, every gate limit at its default (pg); ${loads(c)}`);
  console.log(
    `| flood presentations | admitted | filtered, by rule | other answers | presentations/s |\n|---:|---:|---|---:|---:|\n| ${f.sent} | ${f.admitted} | ${byRule(f.filtered)} | ${f.other} | ${f.rate.toFixed(1)} |`,
  );
  console.log(`\nhonest newcomers: one every ${every} s, each from a /24 of its own, at most ${MAX_TRIES} presentations each`);
  console.log("| newcomers | admitted | presentations | effort asked p50 / max | CPU s solving p50 / p95 / max | s to admission p50 / p95 |");
  console.log("|---:|---:|---:|---|---|---|");
  const tries = newcomers.reduce((a, n) => a + n.tries, 0);
  console.log(
    `| ${newcomers.length} | ${admitted.length} | ${tries} | ${fmt(efforts, 0.5, 0)} / ${efforts.at(-1) ?? "-"} | ${fmt(cpu, 0.5, 2)} / ${fmt(cpu, 0.95, 2)} / ${(cpu.at(-1) ?? 0).toFixed(2)} | ${fmt(wait, 0.5, 2)} / ${fmt(wait, 0.95, 2)} |`,
  );
  console.log(`server CPU s during the leg (next start's process group): ${c.serverCpuSeconds?.toFixed(1) ?? "-"}`);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
