/**
 * The contention legs (issue 42, direction 5): the loads whose callers queue on one row for the
 * whole city, each driven closed-loop at 1, 8 and 32 requests in flight (scripts/bench-drive.ts)
 * while the share of the database's active backends that wait on a Lock is sampled from
 * pg_stat_activity every 50 ms (scripts/bench-locks.ts), with CPU per request (bench-cpu.ts).
 * With --baseline, each leg runs on this build and then on the baseline's at the same load, on the
 * same database, and a ratio line compares them. Every citizen is admitted through the gate.
 */
import { signRequest } from "@/lib/sign-request";
import { admitCitizens, type Citizen } from "./bench-citizens";
import { type CpuPerRequest, type CpuSources, cpuSince, readCpu } from "./bench-cpu";
import { drive, type DrivenRequest, type DriveResult } from "./bench-drive";
import type { LockSampler, LockShare } from "./bench-locks";

export const CONTENTION_LOADS = [1, 8, 32];
/** The distinct citizens whose writes rotate at once (the vault and signed legs). */
export const CITIZENS_AT_ONCE = 48;
/**
 * Vault writes each citizen makes before the next group of CITIZENS_AT_ONCE takes over: under the
 * door's 30 an hour (LIMITS.perHour.vault), so no write is parked and the leg measures the store,
 * not the quarantine. The pools grow through the gate before a run, sized from the rates seen.
 */
const WRITES_PER_CITIZEN = 25;

/**
 * The servers of the contention legs run with these. Client addresses come from X-Forwarded-For
 * (one trusted proxy), every request from an address of its own, so the per-address limits stay at
 * their defaults (30 an hour) and each address's window is a row of its own. The city-wide
 * ceilings a flood of distinct addresses would meet are raised, not turned off (a ceiling at 0 is
 * skipped, and its row with it): the legs measure throughput and the rows they lock, not refusals.
 */
export const CONTENTION_ENV: Record<string, string> = {
  CITY_TRUSTED_PROXIES: "1",
  CITY_GATE_PER_ADDRESS_PER_HOUR: "30",
  CITY_GATE_ADMISSIONS_PER_HOUR: "1000000",
  CITY_GATE_NONCES_LIVE: "1000000",
  CITY_GATE_SUBJECTS_MAX: "10000000",
};

/**
 * Every contention request's own client address (172.16.0.0/12: apart from the other legs' 10/8),
 * each in another /24 than the last 4,095: the gate counts a /24 as one network (120 presentations
 * and 120 nonces an hour), and addresses counted up within a /24 made the legs measure that share.
 */
let addressSerial = 0;
function nextAddress(): string {
  const k = addressSerial++;
  return `172.${16 + (k & 15)}.${(k >> 4) & 255}.${(k >> 12) & 255}`;
}
/** Names and origins of the admissions leg, unique across loads and builds. */
let admissionSerial = 0;

/** Citizens admitted through the gate in groups; each takes WRITES_PER_CITIZEN writes, CITIZENS_AT_ONCE at a time. */
export class CitizenPool {
  readonly citizens: Citizen[] = [];
  private taken = 0;
  constructor(
    private readonly tag: string,
    private readonly keyed: boolean,
    readonly group: number,
  ) {}

  private get capacity(): number {
    return Math.floor(this.citizens.length / this.group) * this.group * WRITES_PER_CITIZEN;
  }

  /** Admits groups until `writes` more can be taken. */
  async reserve(base: string, writes: number): Promise<void> {
    while (this.capacity - this.taken < writes) {
      const admitted = await admitCitizens(base, this.group, `${this.tag}${this.citizens.length}`, { keyed: this.keyed, address: nextAddress });
      this.citizens.push(...admitted);
    }
  }

  /** The citizen of the next write, or null when the pool is spent: w-th write -> group w / (group * per), member w % group. */
  take(): Citizen | null {
    if (this.taken >= this.capacity) return null;
    const w = this.taken++;
    return this.citizens[Math.floor(w / (this.group * WRITES_PER_CITIZEN)) * this.group + (w % this.group)]!;
  }

  /** The n-th citizen of the first group, in rotation (a read spends nothing). */
  reader(n: number): Citizen {
    return this.citizens[n % this.group]!;
  }
}

export interface ContentionLeg {
  label: string;
  /** Makes sure the leg can send `requests` more (admits what it needs, through the gate). */
  reserve?: (base: string, requests: number) => Promise<void>;
  request: (base: string, n: number) => DrivenRequest | null | Promise<DrivenRequest | null>;
  accepted?: (status: number, body: string) => boolean;
}

const json = { "content-type": "application/json" };
/** A vault write was stored (200); 202 is a parked write, anything else a refusal. */
const stored = (status: number) => status === 200 || status === 201;

/** The legs, over pools of `group` citizens at once (48; fewer in the smoke run). */
export function contentionLegs(group: number): ContentionLeg[] {
  // Each build's citizens are its own, admitted through its own gate: a baseline of another schema
  // runs on a database of its own, where this build's citizens do not exist.
  const pools = new Map<string, { vault: CitizenPool; signed: CitizenPool }>();
  const poolsOf = (base: string) => {
    // Each build's names its own (b0, b1): a baseline of the same schema shares this build's database, where one name is one citizen.
    const build = `b${pools.size}-`;
    if (!pools.has(base))
      pools.set(base, { vault: new CitizenPool(`ctn-vault-${build}`, false, group), signed: new CitizenPool(`ctn-signed-${build}`, true, group) });
    return pools.get(base)!;
  };
  return [
    {
      label: "contention: GET /gate",
      request: () => ({ method: "GET", path: "/gate", headers: { "x-forwarded-for": nextAddress() } }),
    },
    {
      label: `contention: POST /api/vault (${group} citizens, Bearer)`,
      reserve: (base, requests) => poolsOf(base).vault.reserve(base, requests),
      request: (base, n) => {
        const citizen = poolsOf(base).vault.take();
        if (!citizen) return null;
        const headers = { ...json, authorization: `Bearer ${citizen.secret}`, "x-forwarded-for": nextAddress() };
        return { method: "POST", path: "/api/vault", headers, body: JSON.stringify({ content: `a contention note ${n}` }) };
      },
      accepted: stored,
    },
    {
      label: "contention: POST /gate (admit, ask bed)",
      request: () => {
        const k = admissionSerial++;
        const presentation = {
          name: `ctn-admit-${process.pid}-${k}`,
          runtime: "tool-agent",
          origin: `ctn-admit-${process.pid}-${k}.bench.example`,
          statement: "A benchmark agent asking for a bed.",
          ask: "bed",
          kind: "agent",
        };
        return { method: "POST", path: "/gate", headers: { ...json, "x-forwarded-for": nextAddress() }, body: JSON.stringify(presentation) };
      },
      accepted: (status, body) => status === 200 && admitted(body),
    },
    {
      label: `contention: POST /api/vault (${group} citizens, signed)`,
      reserve: (base, requests) => poolsOf(base).signed.reserve(base, requests),
      request: async (base, n) => {
        const citizen = poolsOf(base).signed.take();
        if (!citizen) return null;
        const body = JSON.stringify({ content: `a signed contention note ${n}` });
        // Signed for the server it goes to (its @authority), a fresh nonce each; no Bearer beside it.
        const signature = await signRequest({ method: "POST", url: `${base}/api/vault`, body, privateKey: citizen.seed!, lifetimeSeconds: 300 });
        return { method: "POST", path: "/api/vault", headers: { ...json, ...signature, "x-forwarded-for": nextAddress() }, body };
      },
      accepted: stored,
    },
    {
      // The control: a read that locks nothing (its share should be near 0 whatever the build).
      label: `contention: GET /api/vault (read-only control, ${group} citizens)`,
      reserve: (base) => poolsOf(base).vault.reserve(base, poolsOf(base).vault.citizens.length ? 0 : 1),
      request: (base, n) => ({ method: "GET", path: "/api/vault?limit=20", headers: { authorization: `Bearer ${poolsOf(base).vault.reader(n).secret}` } }),
    },
  ];
}

function admitted(body: string): boolean {
  try {
    return (JSON.parse(body) as { verdict?: string }).verdict === "admitted";
  } catch {
    return false;
  }
}

export interface ContentionBuild {
  /** "" for this checkout's build, else the baseline's revision. */
  rev: string;
  base: string;
  cpu: CpuSources;
  /** The lock sampler of this build's own database, when it has one (a baseline of another schema). */
  sampler?: LockSampler | null;
}

export interface ContentionRow {
  db: string;
  leg: string;
  rev: string;
  inFlight: number;
  result: DriveResult;
  locks: LockShare | null;
  cpu: CpuPerRequest | null;
}

export interface ContentionRun {
  db: string;
  builds: ContentionBuild[];
  legs: ContentionLeg[];
  loads: number[];
  /** Seconds per counted run (after a 1 s warm-up), or a number of requests (the smoke run). */
  stop: { seconds: number } | { amount: number };
  /** pg only: PGlite has no pg_stat_activity. */
  sampler: LockSampler | null;
  onRow: (row: ContentionRow) => void;
}

/** Each leg at each load on each build, side by side; returns the rows. */
export async function runContention(run: ContentionRun): Promise<ContentionRow[]> {
  const rows: ContentionRow[] = [];
  for (const leg of run.legs) {
    let fastest = 0;
    for (const inFlight of run.loads) {
      for (const build of run.builds) {
        // Enough citizens for the warm-up and the run at three times the fastest rate seen so far.
        const seconds = "seconds" in run.stop ? run.stop.seconds + 1 : 0;
        const expected = "amount" in run.stop ? run.stop.amount : Math.ceil(Math.max(100, 3 * fastest) * seconds);
        await leg.reserve?.(build.base, expected);
        const load = (stop: ContentionRun["stop"]) =>
          drive({ base: build.base, inFlight, stop, next: (n) => leg.request(build.base, n), accepted: leg.accepted });
        if ("seconds" in run.stop) await load({ seconds: 1 }); // warm-up, not counted
        const before = await readCpu(build.cpu);
        const sampler = build.sampler ?? run.sampler;
        await sampler?.start();
        const result = await load(run.stop);
        const locks = (await sampler?.stop()) ?? null;
        const cpu = await cpuSince(before, build.cpu, result.answered);
        fastest = Math.max(fastest, result.rate);
        const row = { db: run.db, leg: leg.label, rev: build.rev, inFlight, result, locks, cpu };
        rows.push(row);
        run.onRow(row);
      }
    }
  }
  return rows;
}

const pct = (share: number | null | undefined) => (share === null || share === undefined ? "–" : `${(share * 100).toFixed(0)} %`);
const cpuText = (cpu: CpuPerRequest | null) => (cpu ? `${cpu.server.toFixed(2)} + ${cpu.database === null ? "in server" : cpu.database.toFixed(2)}` : "–");

export function formatContentionRow(row: ContentionRow): string {
  const r = row.result;
  const statuses = [...r.statuses.entries()].map(([s, n]) => `${s}:${n}`).join(" ");
  const build = row.rev ? ` [baseline ${row.rev}]` : "";
  const line = `${row.db.padEnd(6)} ${(row.leg + build).padEnd(60)} ${String(row.inFlight).padStart(2)} in flight ${r.rate.toFixed(0).padStart(5)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  refused ${r.refused}/${r.answered} (${statuses})  lock wait ${pct(row.locks?.share)} of ${row.locks ? row.locks.meanActive.toFixed(1) : "–"} active  CPU ms/req ${cpuText(row.cpu)}${r.ranOut ? "  (ran out of citizens early)" : ""}`;
  // What the waiting backends waited for, the most seen first: which row a share above nothing is.
  const waits = (row.locks?.waits ?? []).map((w) => `\n         waited ${w.seen}x on ${w.lock}: ${w.waiting}\n           blocked by ${w.blocker}`);
  return line + waits.join("");
}

/** The contention table (markdown), then with a baseline the ratios of each leg and load. */
export function contentionTables(rows: ContentionRow[]): string[] {
  const lines = [
    `| db | leg | build | in flight | req/s | p50 ms | p99 ms | refused / answered | 5xx + transport | Lock wait (share of active backends) | mean active backends | CPU ms/req (server + PostgreSQL) |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|`,
  ];
  for (const row of rows) {
    const r = row.result;
    lines.push(
      `| ${row.db} | ${row.leg.replace(/^contention: /, "")} | ${row.rev || "this"} | ${row.inFlight} | ${r.rate.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.refused} / ${r.answered} | ${r.serverErrors} | ${pct(row.locks?.share)} | ${row.locks ? row.locks.meanActive.toFixed(1) : "–"} | ${cpuText(row.cpu)} |`,
    );
  }
  const pairs = rows
    .filter((row) => !row.rev)
    .flatMap((after) => {
      const before = rows.find((b) => b.rev && b.db === after.db && b.leg === after.leg && b.inFlight === after.inFlight);
      return before ? [[before, after] as const] : [];
    });
  if (pairs.length === 0) return lines;
  lines.push(
    "",
    `| db | leg | in flight | req/s this / baseline | p50 this / baseline | p99 this / baseline | Lock wait baseline -> this |`,
    `|---|---|---|---|---|---|---|`,
  );
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}x` : "–");
  for (const [before, after] of pairs)
    lines.push(
      `| ${after.db} | ${after.leg.replace(/^contention: /, "")} | ${after.inFlight} | ${ratio(after.result.rate, before.result.rate)} | ${ratio(after.result.p50, before.result.p50)} | ${ratio(after.result.p99, before.result.p99)} | ${pct(before.locks?.share)} -> ${pct(after.locks?.share)} |`,
    );
  return lines;
}

/** What the contention servers ran with, printed with the legs. */
export function contentionSettings(group: number): string {
  const env = Object.entries(CONTENTION_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  return `contention servers: ${env}; every request from its own X-Forwarded-For address (172.16.0.0/12), per-address limits at their defaults; vault writes rotate over ${group} citizens at once, ${WRITES_PER_CITIZEN} each (under 30 an hour), admitted through the gate`;
}
