/**
 * What scripts/bench-flood.ts's flood and newcomers say to the gate: a presentation's body, a gate
 * nonce, a verdict read, and one honest newcomer presenting as docs/pow.md tells a client to
 * (keyless, with a fresh controller key of its own, or signed with a citizen's bound key).
 */
import http from "node:http";
import { importSeed, signRequest, solveGatePuzzle } from "@/lib/sign-request";

/** Presentations an honest newcomer makes at most before it gives up. */
export const MAX_TRIES = 5;

/** The ceiling's own refusal (lib/city/gate/gate-flood.ts ceilingFlood) begins so when no bid can lift it. */
const CEILING_FULL = /^The city admits at most/;
/** ... and so when this step's keyless bids are taken (retry_after_seconds: until the next step opens). */
const STEP_TAKEN = /^Bids for this step are taken/;

export function presentationBody(name: string, origin: string, extra: Record<string, string> = {}): string {
  return JSON.stringify({ name, runtime: "language-model", origin, statement: "I would like to live here.", ask: "bed", kind: "agent", ...extra });
}

/** What a verdict of POST /gate says, as the bench reads it. */
export interface GateVerdict {
  status: number;
  admitted: boolean;
  rule: string;
  /** Set when a bid of at least this effort would be served (the refusal names it). */
  suggestedEffort?: number;
  retryAfterSeconds?: number;
  /** The ceiling refused it and no bid of this presentation would lift that. */
  ceilingFull: boolean;
  /** The ceiling refused it because this step's keyless bids are taken: a bid is served from retryAfterSeconds on. */
  stepTaken: boolean;
}

export async function readVerdict(answer: Response): Promise<GateVerdict> {
  const text = await answer.text();
  let json: { verdict?: string; rule?: string; reason?: string; suggested_effort?: number; retry_after_seconds?: number } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    // Not a verdict: counted by its status.
  }
  const admitted = answer.status === 200 && json.verdict === "admitted";
  return {
    status: answer.status,
    admitted,
    rule: admitted ? "admitted" : answer.status !== 200 ? `HTTP ${answer.status}` : (json.rule ?? json.verdict ?? "unknown"),
    ...(json.suggested_effort !== undefined ? { suggestedEffort: json.suggested_effort } : {}),
    ...(json.retry_after_seconds !== undefined ? { retryAfterSeconds: json.retry_after_seconds } : {}),
    ceilingFull: !admitted && json.rule === "flood" && json.suggested_effort === undefined && CEILING_FULL.test(json.reason ?? ""),
    stepTaken: !admitted && json.rule === "flood" && STEP_TAKEN.test(json.reason ?? ""),
  };
}

/**
 * POST /gate on a connection of its own: a pooled keep-alive one may have been closed by the server
 * while a long search held the event loop, and the presentation would get no answer ("other side closed").
 */
export function postGate(base: string, headers: Record<string, string>, body: string): Promise<Response> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: Number(url.port),
        method: "POST",
        path: "/gate",
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), connection: "close", ...headers },
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve(new Response(Buffer.concat(chunks), { status: response.statusCode ?? 0 })));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

/** GET /gate from `from`: the nonce (null when none was given) and the effort suggested with it. */
export async function gateNonce(base: string, from: Record<string, string>): Promise<{ nonce: string | null; effort: number; status: number }> {
  const answer = await fetch(`${base}/gate`, { headers: from });
  const described = (await answer.json().catch(() => ({}))) as { nonce?: string | null; pow?: { suggested_effort: number } };
  return { nonce: described.nonce ?? null, effort: described.pow?.suggested_effort ?? 0, status: answer.status };
}

/** The CPU seconds (user + system) of this process since `since` (process.cpuUsage()). */
export function cpuSecondsSince(since: NodeJS.CpuUsage): number {
  const spent = process.cpuUsage(since);
  return (spent.user + spent.system) / 1e6;
}

/** A CITY-POW/1 solution with the client helper, and the CPU seconds it took (the search is synchronous). */
export async function solve(nonce: string, name: string, origin: string, effort: number): Promise<{ solution: string; cpuSeconds: number }> {
  const before = process.cpuUsage();
  const solution = await solveGatePuzzle({ nonce, name, origin, effort });
  const cpuSeconds = cpuSecondsSince(before);
  // Let the event loop read what came while the search held it (a keep-alive connection the server
  // closed meanwhile), so that the presentation is not sent on a socket already closed.
  await new Promise((r) => setImmediate(r));
  return { solution, cpuSeconds };
}

/** A fresh controller key's public half and its signature over a gate nonce, as an agent binds one at admission. */
export async function controllerFields(nonce: string, seed = crypto.getRandomValues(new Uint8Array(32))): Promise<Record<string, string>> {
  const { privateKey, publicKey } = await importSeed(seed);
  const signature = new Uint8Array(await crypto.subtle.sign("Ed25519", privateKey, new TextEncoder().encode(nonce)));
  return { controller_public_key: Buffer.from(publicKey).toString("hex"), controller_signature: Buffer.from(signature).toString("hex") };
}

/**
 * How a newcomer presents: without a key; with a fresh controller key signing the nonce (it bids
 * past the open share like anyone, in steps: a fresh key buys nothing at the ceiling); or that and
 * the request signed (CITY-SIG/1) with the bound key of a settled citizen vouching for it, which
 * needs no work, is not stepped and reaches the reserve.
 */
export type NewcomerKind = "keyless" | "keyed" | "signed";

export interface Newcomer {
  kind: NewcomerKind;
  /** Seconds from the leg's start to its first GET /gate. */
  at: number;
  admitted: boolean;
  /** admitted; outbid (every try refused with a higher effort); full (refused with no effort that lifts it); or another rule. */
  outcome: "admitted" | "outbid" | "full" | string;
  tries: number;
  efforts: number[];
  cpuSeconds: number;
  secondsToAdmission: number;
  /** What the refusal that ended its tries said to wait, when it said it. */
  retryAfterSeconds?: number;
  /** Refusals that said this step's bids were taken (each waited for the next step). */
  stepWaits: number;
  /** Set after such a refusal: when the next step opens (performance.now() ms) and the effort it asks. */
  nextStep?: { at: number; effort: number };
}

/**
 * One honest newcomer from a /24 of its own (`address`), as docs/pow.md tells a client: GET /gate,
 * solve at the suggested effort when it is above 0, present with the nonce and the solution; when
 * a refusal names a (higher) effort, take a fresh nonce and solve again (at most MAX_TRIES); when
 * it names none, wait its Retry-After (the bench records it and stops). A signed newcomer solves
 * nothing: the signature of a bound key (`sponsorSeed`) is its bid.
 */
export async function newcomer(
  base: string,
  k: number,
  options: { kind: NewcomerKind; address: string; legStart: number; sponsorSeed?: Uint8Array },
): Promise<Newcomer> {
  const from = { "x-forwarded-for": options.address };
  const name = `${options.kind}-${process.pid}-${k}`;
  const origin = `${options.kind}-${k}.example`;
  const started = performance.now();
  const out: Newcomer = {
    kind: options.kind,
    at: (started - options.legStart) / 1000,
    admitted: false,
    outcome: "outbid",
    tries: 0,
    efforts: [],
    cpuSeconds: 0,
    secondsToAdmission: NaN,
    stepWaits: 0,
  };
  while (out.tries < MAX_TRIES) {
    out.tries++;
    try {
      if (await present(base, name, origin, from, options, out, started)) break;
    } catch {
      // A connection the loaded server closed under a request: that try is spent, the newcomer tries again.
      out.outcome = "no answer";
    }
  }
  return out;
}

/** One try of a newcomer: whether it ended its tries (admitted, or refused with no effort that lifts it). */
async function present(
  base: string,
  name: string,
  origin: string,
  from: Record<string, string>,
  options: { kind: NewcomerKind; sponsorSeed?: Uint8Array },
  out: Newcomer,
  started: number,
): Promise<boolean> {
  const { nonce, effort: offered, status } = await gateNonce(base, from);
  if (!nonce) {
    out.outcome = `GET /gate ${status}`;
    return true;
  }
  // Told that this step's bids are taken: solve now at the effort the refusal named for the next step
  // (the nonce is fresh 600 s), and present when that step opens, as docs/pow.md says.
  const waiting = out.nextStep;
  out.nextStep = undefined;
  const effort = waiting ? Math.max(offered, waiting.effort) : offered;
  out.efforts.push(effort);
  const extra: Record<string, string> = { nonce, ...(options.kind === "keyless" ? {} : await controllerFields(nonce)) };
  if (effort > 0 && options.kind !== "signed") {
    const solved = await solve(nonce, name, origin, effort);
    extra.pow_solution = solved.solution;
    out.cpuSeconds += solved.cpuSeconds;
  }
  if (waiting) {
    const ms = waiting.at - performance.now();
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  }
  const text = presentationBody(name, origin, extra);
  const signature = options.kind === "signed" ? await signRequest({ method: "POST", url: `${base}/gate`, body: text, privateKey: options.sponsorSeed! }) : {};
  const verdict = await readVerdict(await postGate(base, { ...from, ...signature }, text));
  if (verdict.admitted) {
    out.admitted = true;
    out.outcome = "admitted";
    out.secondsToAdmission = (performance.now() - started) / 1000;
    return true;
  }
  out.outcome = "outbid";
  if (verdict.stepTaken && verdict.suggestedEffort !== undefined && verdict.retryAfterSeconds !== undefined) {
    out.outcome = "step taken";
    out.stepWaits++;
    out.nextStep = { at: performance.now() + verdict.retryAfterSeconds * 1000, effort: verdict.suggestedEffort };
    return false;
  }
  if (verdict.suggestedEffort !== undefined) return false;
  out.outcome = verdict.ceilingFull ? "full" : verdict.rule;
  if (verdict.retryAfterSeconds !== undefined) out.retryAfterSeconds = verdict.retryAfterSeconds;
  return true;
}
