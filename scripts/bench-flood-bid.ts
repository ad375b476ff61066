/**
 * The bidding flood of scripts/bench-flood.ts (its leg `bid`), run in a process of its own: first
 * admissions without a key from `prefixes` IPv4 /24s in rotation, `inFlight` at a time, each doing
 * what an honest client does (GET /gate, solve CITY-POW/1 at the suggested effort with the client
 * helper, present), so it competes for the bids' part of the admissions window. One rule an honest
 * client has no use for keeps its work for what it can win: once the ceiling refuses a bid with no
 * effort (the keyless reach is full), its workers present without solving, each once a second,
 * until a refusal names an effort again. The solving is synchronous, so the process solves one bid at a time.
 */
import { nearestRank } from "./bench-drive";
import { cpuSecondsSince, gateNonce, MAX_TRIES, type Newcomer, postGate, presentationBody, readVerdict, solve } from "./bench-flood-gate";

export interface BidFloodOptions {
  base: string;
  seconds: number;
  inFlight: number;
  prefixes: number;
  /** Date.now() when the leg started: the timeline's zero. */
  legStart: number;
  /** Seconds per timeline step. */
  step: number;
}

export interface TimelineStep {
  /** The most the suggested effort was seen at (GET /gate) during the step; -1 when none was read. */
  maxEffort: number;
  minEffort: number;
  presentations: number;
  admittedWithoutBid: number;
  admittedBids: number;
}

export interface BidFloodFigures {
  presentations: number;
  /** Presentations that carried a solution. */
  bids: number;
  admittedWithoutBid: number;
  admittedBids: number;
  /** Admitted bids by the effort they solved. */
  wonAtEffort: Record<string, number>;
  filtered: Record<string, number>;
  /** GET /gate answers with no nonce (a nonce quota's 429). */
  noNonce: number;
  /** Requests that got no answer (a connection closed under them). */
  transportErrors: number;
  solutions: number;
  solveCpuSeconds: number;
  /** Of the solving, what the bids that were admitted took. */
  wonCpuSeconds: number;
  /** The flood process's whole CPU time (solving, requests, parsing). */
  processCpuSeconds: number;
  /** Seconds from the leg's start: the first effort above 0 seen, the first of the most (22), the first bid the ceiling refused. */
  firstEffortAt: number | null;
  firstMaxEffortAt: number | null;
  firstFullAt: number | null;
  timeline: TimelineStep[];
  seconds: number;
}

const PROBE_EVERY_MS = 1000;

export async function biddingFlood(o: BidFloodOptions): Promise<BidFloodFigures> {
  const cpuAtStart = process.cpuUsage();
  const f: BidFloodFigures = {
    presentations: 0,
    bids: 0,
    admittedWithoutBid: 0,
    admittedBids: 0,
    wonAtEffort: {},
    filtered: {},
    noNonce: 0,
    transportErrors: 0,
    solutions: 0,
    solveCpuSeconds: 0,
    wonCpuSeconds: 0,
    processCpuSeconds: 0,
    firstEffortAt: null,
    firstMaxEffortAt: null,
    firstFullAt: null,
    timeline: [],
    seconds: 0,
  };
  const sinceStart = () => (Date.now() - o.legStart) / 1000;
  const stepNow = (): TimelineStep => {
    const i = Math.max(0, Math.floor(sinceStart() / o.step));
    while (f.timeline.length <= i) f.timeline.push({ maxEffort: -1, minEffort: Infinity, presentations: 0, admittedWithoutBid: 0, admittedBids: 0 });
    return f.timeline[i]!;
  };
  const deadline = o.legStart + o.seconds * 1000;
  // Until when the flood presents without solving: the keyless reach was full at its last refusal.
  let fullUntil = 0;
  let n = 0;

  // One search at a time (the process could run no more at once): the helper awaits a digest before
  // its search, and another worker's search run in that await would be counted in both CPU windows.
  let solving: Promise<unknown> = Promise.resolve();
  const solveInTurn = (nonce: string, name: string, origin: string, effort: number) => {
    const next = solving.then(() => solve(nonce, name, origin, effort));
    solving = next.catch(() => undefined);
    return next;
  };
  const worker = async () => {
    while (Date.now() < deadline) {
      try {
        await attempt();
      } catch {
        // A connection the loaded server closed under a request: counted, and the worker goes on.
        f.transportErrors++;
      }
    }
  };
  const attempt = async () => {
    const k = n++;
    const from = { "x-forwarded-for": `21.${(k % o.prefixes) >> 8}.${(k % o.prefixes) & 255}.${1 + Math.floor(Math.random() * 254)}` };
    const name = `bidder-${process.pid}-${k}`;
    const origin = `bidder-${process.pid}-${k}.example`;
    const { nonce, effort } = await gateNonce(o.base, from);
    if (!nonce) {
      f.noNonce++;
      await new Promise((r) => setTimeout(r, 100));
      return;
    }
    const seen = stepNow();
    seen.maxEffort = Math.max(seen.maxEffort, effort);
    seen.minEffort = Math.min(seen.minEffort, effort);
    if (effort > 0) f.firstEffortAt ??= sinceStart();
    if (effort >= 22) f.firstMaxEffortAt ??= sinceStart();
    const extra: Record<string, string> = { nonce };
    let cpu = 0;
    if (effort > 0 && Date.now() >= fullUntil) {
      const solved = await solveInTurn(nonce, name, origin, effort);
      extra.pow_solution = solved.solution;
      cpu = solved.cpuSeconds;
      f.solutions++;
      f.solveCpuSeconds += cpu;
    }
    const verdict = await readVerdict(await postGate(o.base, from, presentationBody(name, origin, extra)));
    const step = stepNow();
    f.presentations++;
    step.presentations++;
    if (extra.pow_solution) f.bids++;
    if (verdict.admitted && extra.pow_solution) {
      f.admittedBids++;
      step.admittedBids++;
      f.wonCpuSeconds += cpu;
      f.wonAtEffort[effort] = (f.wonAtEffort[effort] ?? 0) + 1;
    } else if (verdict.admitted) {
      f.admittedWithoutBid++;
      step.admittedWithoutBid++;
    } else {
      const rule = verdict.ceilingFull ? "flood (ceiling, no bid lifts it)" : verdict.suggestedEffort !== undefined ? "flood (a bid is served)" : verdict.rule;
      f.filtered[rule] = (f.filtered[rule] ?? 0) + 1;
    }
    if (verdict.ceilingFull) {
      if (extra.pow_solution) f.firstFullAt ??= sinceStart();
      fullUntil = Date.now() + PROBE_EVERY_MS;
    } else if (verdict.suggestedEffort !== undefined) fullUntil = 0;
    // While full, each worker presents once a second (with a nonce of its own: a presentation spends it either way).
    if (Date.now() < fullUntil) await new Promise((r) => setTimeout(r, Math.max(0, fullUntil - Date.now())));
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: o.inFlight }, worker));
  f.seconds = (Date.now() - started) / 1000;
  f.processCpuSeconds = cpuSecondsSince(cpuAtStart);
  return f;
}

/** The figures of several flood processes as one flood's (sums, the earliest moments, the timelines step by step). */
export function mergeFloods(all: BidFloodFigures[]): BidFloodFigures {
  const sum = (pick: (f: BidFloodFigures) => number) => all.reduce((a, f) => a + pick(f), 0);
  const merged = (pick: (f: BidFloodFigures) => Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const f of all) for (const [key, n] of Object.entries(pick(f))) out[key] = (out[key] ?? 0) + n;
    return out;
  };
  const earliest = (pick: (f: BidFloodFigures) => number | null) => {
    const at = all.map(pick).filter((t): t is number => t !== null);
    return at.length ? Math.min(...at) : null;
  };
  const timeline: TimelineStep[] = [];
  for (const f of all)
    f.timeline.forEach((s, i) => {
      const t = (timeline[i] ??= { maxEffort: -1, minEffort: Infinity, presentations: 0, admittedWithoutBid: 0, admittedBids: 0 });
      t.maxEffort = Math.max(t.maxEffort, s.maxEffort);
      t.minEffort = Math.min(t.minEffort, s.minEffort ?? Infinity);
      t.presentations += s.presentations;
      t.admittedWithoutBid += s.admittedWithoutBid;
      t.admittedBids += s.admittedBids;
    });
  return {
    presentations: sum((f) => f.presentations),
    bids: sum((f) => f.bids),
    admittedWithoutBid: sum((f) => f.admittedWithoutBid),
    admittedBids: sum((f) => f.admittedBids),
    wonAtEffort: merged((f) => f.wonAtEffort),
    filtered: merged((f) => f.filtered),
    noNonce: sum((f) => f.noNonce),
    transportErrors: sum((f) => f.transportErrors),
    solutions: sum((f) => f.solutions),
    solveCpuSeconds: sum((f) => f.solveCpuSeconds),
    wonCpuSeconds: sum((f) => f.wonCpuSeconds),
    processCpuSeconds: sum((f) => f.processCpuSeconds),
    firstEffortAt: earliest((f) => f.firstEffortAt),
    firstMaxEffortAt: earliest((f) => f.firstMaxEffortAt),
    firstFullAt: earliest((f) => f.firstFullAt),
    timeline,
    seconds: Math.max(...all.map((f) => f.seconds)),
  };
}

export interface BidLegContext {
  load: number[];
  loadAfter: number[];
  serverCpuSeconds: number | null;
  prefixes: number;
  inFlight: number;
  floodProcesses: number;
  seconds: number;
  every: number;
  step: number;
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const quantile = (values: number[], p: number, digits: number) => (values.length ? nearestRank(sorted(values), p).toFixed(digits) : "-");
const range = (values: number[]) => (values.length ? `${Math.min(...values)} - ${Math.max(...values)}` : "-");
const at = (t: number | null) => (t === null ? "never" : `${t.toFixed(0)} s`);

/** The bid leg's tables (Markdown, for BENCHMARKS.md). */
export function reportBid(f: BidFloodFigures, newcomers: Newcomer[], c: BidLegContext): void {
  const rules = Object.entries(f.filtered)
    .map(([rule, n]) => `${rule} ${n}`)
    .join(", ");
  const won = Object.entries(f.wonAtEffort)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([effort, n]) => `${effort}: ${n}`)
    .join(", ");
  console.log(
    `\nleg bid. bidding flood: ${c.floodProcesses} process(es), ${c.prefixes} /24s, ${c.inFlight} in flight each, ${c.seconds} s, every gate limit at its default (pg); ` +
      `load average ${c.load.map((l) => l.toFixed(2)).join(" / ")} at the start, ${c.loadAfter.map((l) => l.toFixed(2)).join(" / ")} at the end`,
  );
  console.log(
    "| flood presentations | of them bids | admitted without a bid | admitted bids | filtered, by rule | GET /gate without a nonce | no answer | solutions | CPU s solving: all / admitted bids | flood process CPU s |",
  );
  console.log("|---:|---:|---:|---:|---|---:|---:|---:|---|---:|");
  console.log(
    `| ${f.presentations} | ${f.bids} | ${f.admittedWithoutBid} | ${f.admittedBids} | ${rules || "none"} | ${f.noNonce} | ${f.transportErrors} | ${f.solutions} | ${f.solveCpuSeconds.toFixed(1)} / ${f.wonCpuSeconds.toFixed(1)} | ${f.processCpuSeconds.toFixed(1)} |`,
  );
  console.log(`admitted bids by effort solved: ${won || "none"}`);
  console.log(`server CPU s during the leg (next start's process group): ${c.serverCpuSeconds?.toFixed(1) ?? "-"}`);
  console.log(
    `suggested effort first above 0 at ${at(f.firstEffortAt)}, first at 22 at ${at(f.firstMaxEffortAt)}; the ceiling first refused a bid (the keyless reach full) at ${at(f.firstFullAt)}`,
  );

  console.log(`\ntimeline (${c.step} s steps from the flood's start; efforts as GET /gate gave them to the flood)`);
  console.log(
    "| s | effort seen | flood presentations | flood admitted: no bid / bid | keyless newcomers: admitted / refused | keyed + signed newcomers: admitted / refused |",
  );
  console.log("|---|---|---:|---|---|---|");
  f.timeline.forEach((s, i) => {
    const inStep = newcomers.filter((n) => n.at >= i * c.step && n.at < (i + 1) * c.step);
    const count = (kind: (n: Newcomer) => boolean) => {
      const of = inStep.filter(kind);
      return `${of.filter((n) => n.admitted).length} / ${of.filter((n) => !n.admitted).length}`;
    };
    const effort = s.maxEffort < 0 ? "-" : s.minEffort === s.maxEffort ? `${s.maxEffort}` : `${s.minEffort} - ${s.maxEffort}`;
    console.log(
      `| ${i * c.step}-${(i + 1) * c.step} | ${effort} | ${s.presentations} | ${s.admittedWithoutBid} / ${s.admittedBids} | ${count((n) => n.kind === "keyless")} | ${count((n) => n.kind !== "keyless")} |`,
    );
  });

  console.log(`\nhonest newcomers: one every ${c.every} s, each from a /24 of its own, at most ${MAX_TRIES} presentations each`);
  console.log(
    "| kind | newcomers | admitted | refused: outbid / full / other | presentations | effort asked p50 / max | CPU s solving p50 / p95 / max / sum | s to admission p50 / p95 | Retry-After told (s) |",
  );
  console.log("|---|---:|---:|---|---:|---|---|---|---|");
  for (const kind of ["keyless", "keyed", "signed"] as const) {
    const of = newcomers.filter((n) => n.kind === kind);
    if (!of.length) continue;
    const admitted = of.filter((n) => n.admitted);
    const cpu = of.map((n) => n.cpuSeconds);
    const efforts = of.flatMap((n) => n.efforts);
    const outcome = (o: string) => of.filter((n) => n.outcome === o).length;
    const other = of.filter((n) => !["admitted", "outbid", "full"].includes(n.outcome)).map((n) => n.outcome);
    console.log(
      `| ${kind} | ${of.length} | ${admitted.length} | ${outcome("outbid")} / ${outcome("full")} / ${other.length}${other.length ? ` (${[...new Set(other)].join(", ")})` : ""} | ${of.reduce((a, n) => a + n.tries, 0)} | ` +
        `${quantile(efforts, 0.5, 0)} / ${efforts.length ? Math.max(...efforts) : "-"} | ${quantile(cpu, 0.5, 2)} / ${quantile(cpu, 0.95, 2)} / ${quantile(cpu, 1, 2)} / ${cpu.reduce((a, b) => a + b, 0).toFixed(2)} | ` +
        `${quantile(
          admitted.map((n) => n.secondsToAdmission),
          0.5,
          2,
        )} / ${quantile(
          admitted.map((n) => n.secondsToAdmission),
          0.95,
          2,
        )} | ${range(of.flatMap((n) => (n.retryAfterSeconds === undefined ? [] : [n.retryAfterSeconds])))} |`,
    );
  }
  const closing = newcomers.filter((n) => n.at >= c.seconds);
  const told = (n: Newcomer) =>
    n.admitted
      ? `admitted in ${n.secondsToAdmission.toFixed(1)} s`
      : `${n.outcome}${n.retryAfterSeconds !== undefined ? `, Retry-After ${n.retryAfterSeconds} s` : ""}`;
  console.log(
    `after the leg's ${c.seconds} s: ${closing.map((n) => `${n.kind} at ${n.at.toFixed(0)} s: effort ${n.efforts.join(", ")}, ${n.cpuSeconds.toFixed(2)} CPU s, ${told(n)}`).join("; ") || "no newcomer"}`,
  );
  const keyless = newcomers.filter((n) => n.kind === "keyless");
  const waited = keyless.filter((n) => n.stepWaits > 0);
  const waitedIn = waited.filter((n) => n.admitted).map((n) => n.secondsToAdmission);
  console.log(
    `keyless newcomers told "bids for this step are taken": ${waited.length} (${waited.reduce((a, n) => a + n.stepWaits, 0)} such refusals); ` +
      `${waitedIn.length} of them admitted after waiting, s to admission max ${waitedIn.length ? Math.max(...waitedIn).toFixed(1) : "-"}; ` +
      `keyless s to admission max ${keyless.some((n) => n.admitted) ? Math.max(...keyless.filter((n) => n.admitted).map((n) => n.secondsToAdmission)).toFixed(1) : "-"}`,
  );
  const lastAdmitted = keyless.filter((n) => n.admitted).at(-1);
  const shutOut = lastAdmitted ? keyless.filter((n) => n.at > lastAdmitted.at) : keyless;
  const end = Math.max(c.seconds, ...newcomers.map((n) => n.at));
  console.log(
    `keyless newcomers: the last admitted arrived at ${lastAdmitted ? `${lastAdmitted.at.toFixed(0)} s` : "never"}; ` +
      `the ${shutOut.length} after it, to the leg's end at ${end.toFixed(0)} s (${lastAdmitted ? (end - lastAdmitted.at).toFixed(0) : end.toFixed(0)} s), were all refused`,
  );
}
