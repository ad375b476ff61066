import { desc, eq, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { env } from "@/lib/env";
import { logFailure } from "@/lib/logger";
import { COSIGNATURE, parseNote, parseVkey, type Verifier, validCosignatures } from "@/lib/tlog/note";
import { currentCheckpoint } from "./checkpoints";
import type { LogDescriptor } from "./descriptor";
import { consistencyProof } from "./proofs";

/** A witness the city asks to cosign: its cosigner key (C2SP vkey, type 0x04) and its submission prefix. */
export interface Witness {
  name: string;
  vkey: string;
  url: string;
  verifier: Verifier;
}

/** CITY_LOG_WITNESSES: "<vkey> <submission URL>" entries, comma-separated. */
export function configuredWitnesses(text = env().CITY_LOG_WITNESSES ?? ""): Witness[] {
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [vkey, url, ...rest] = entry.split(/\s+/);
      if (!vkey || !url || rest.length > 0) throw new Error("CITY_LOG_WITNESSES: each entry is '<vkey> <submission URL>'");
      const verifier = parseVkey(vkey);
      if (verifier.type !== COSIGNATURE) throw new Error(`CITY_LOG_WITNESSES: ${verifier.name}'s key is not a cosignature key (type 0x04)`);
      if (!/^https?:\/\//.test(url)) throw new Error(`CITY_LOG_WITNESSES: ${verifier.name}'s URL is not http(s)`);
      // The URL is published on the card and the log page: a password in it would be published too.
      const parsed = URL.canParse(url) ? new URL(url) : undefined;
      if (!parsed) throw new Error(`CITY_LOG_WITNESSES: ${verifier.name}'s URL is not a URL`);
      if (parsed.username || parsed.password)
        throw new Error(`CITY_LOG_WITNESSES: ${verifier.name}'s URL carries credentials, and it is published: give the witness's URL without them`);
      return { name: verifier.name, vkey, url: url.replace(/\/+$/, ""), verifier };
    });
}

export interface SyncOutcome {
  witness: string;
  outcome: "cosigned" | "current" | "refused" | "unreachable";
  size: number;
  detail: string;
}

type Fetch = typeof fetch;

/** The most of a witness's answer the city reads: a cosignature is one line of about 150 bytes, a 409 one number. */
export const WITNESS_ANSWER_MAX_BYTES = 4096;
/** A cosignature is dated when the witness made it (C2SP tlog-cosignature): more than this from the city's clock, it is refused. */
export const COSIGNATURE_CLOCK_SKEW_S = 3600;
/** Of a refusing witness's own words, the city repeats its first line, printable ASCII only, this many characters at most. */
export const WITNESS_ECHO_MAX_CHARS = 240;

/**
 * Asks every witness to cosign the latest checkpoint (tlog-witness add-checkpoint, with the
 * consistency proof from the size it last cosigned), verifies each cosignature against the
 * witness's key and keeps it. Runs outside any write's transaction. A witness is an outside party
 * and its answer is trusted for nothing: each witness's outcome is one of the four, whatever it
 * answers; its answer (headers and body) must end within what is left of `budgetMs`; no more than
 * WITNESS_ANSWER_MAX_BYTES of it is read; a redirect is not followed; and the witnesses are asked
 * independently, so one's failure never loses another's outcome.
 */
export async function syncWitnesses(
  log: LogDescriptor,
  db: Database,
  now: Date,
  options: { budgetMs?: number; fetch?: Fetch; witnesses?: Witness[] } = {},
): Promise<{ size: number; witnesses: SyncOutcome[] }> {
  const deadline = Date.now() + (options.budgetMs ?? 8000);
  const witnesses = options.witnesses ?? configuredWitnesses();
  const checkpoint = await currentCheckpoint(log, db, now);
  const settled = await Promise.allSettled(witnesses.map((w) => syncOne(log, db, w, checkpoint, now, deadline, options.fetch ?? fetch)));
  const outcomes = settled.map((s, i): SyncOutcome => {
    if (s.status === "fulfilled") return s.value;
    // The city's own failure (its database) while syncing this witness: nothing was kept, the next sync tries again.
    logFailure("log-witness-sync", s.reason);
    return {
      witness: witnesses[i]!.name,
      outcome: "unreachable",
      size: checkpoint.size,
      detail: "the city could not finish this witness's sync; the next sync tries again",
    };
  });
  return { size: checkpoint.size, witnesses: outcomes };
}

async function syncOne(
  log: LogDescriptor,
  db: Database,
  witness: Witness,
  checkpoint: { size: number; note: string },
  now: Date,
  deadline: number,
  fetcher: Fetch,
): Promise<SyncOutcome> {
  const said = (outcome: SyncOutcome["outcome"], detail: string): SyncOutcome => ({ witness: witness.name, outcome, size: checkpoint.size, detail });
  const { cosignatures: logCosignatures } = log.tables;
  const [last] = await db
    .select({ size: logCosignatures.size })
    .from(logCosignatures)
    .where(eq(logCosignatures.witness, witness.name))
    .orderBy(desc(logCosignatures.size))
    .limit(1);
  if (last?.size === checkpoint.size) return said("current", "already cosigned this size");
  if (checkpoint.size === 0) return said("current", "the log is empty");
  let old = last?.size ?? 0;
  // A 409 names the size the witness last cosigned (it may know a size we did not keep): retry once from there.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (old > checkpoint.size) return said("refused", `the witness has cosigned size ${old}, larger than the city's ${checkpoint.size}`);
    const proof = await consistencyProof(log, db, old, checkpoint.size);
    const body = `old ${old}\n${proof.map((p) => `${p}\n`).join("")}\n${checkpoint.note}`;
    const answer = await askWitness(fetcher, `${witness.url}/add-checkpoint`, body, deadline);
    if ("failed" in answer) return said(answer.failed, answer.detail);
    const { status, contentType, text } = answer;
    if (status === 409 && contentType.startsWith("text/x.tlog.size") && /^(0|[1-9][0-9]*)\n$/.test(text) && attempt === 0) {
      old = Number(text.trim());
      continue;
    }
    if (status !== 200) return said("refused", [`HTTP ${status}`, echoed(text)].filter(Boolean).join(": "));
    let valid: Array<{ line: string; timestamp: number }> = [];
    try {
      valid = validCosignatures(parseNote(checkpoint.note + text), witness.verifier);
    } catch {
      valid = [];
    }
    if (valid.length === 0) return said("refused", "the witness answered no cosignature that verifies against its key");
    const clock = now.getTime() / 1000;
    const dated = valid.filter((c) => Math.abs(c.timestamp - clock) <= COSIGNATURE_CLOCK_SKEW_S);
    if (dated.length === 0) return said("refused", "the witness's cosignature is dated more than an hour away from the city's clock");
    const newest = dated.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
    await db
      .insert(logCosignatures)
      .values({ witness: witness.name, size: checkpoint.size, line: newest.line, cosignedAt: new Date(newest.timestamp * 1000) })
      .onConflictDoNothing();
    return said("cosigned", `cosigned at ${new Date(newest.timestamp * 1000).toISOString()}`);
  }
  return said("refused", "the witness kept naming another size");
}

type Answer = { status: number; contentType: string; text: string } | { failed: "refused" | "unreachable"; detail: string };

/**
 * One POST to a witness, its whole answer (headers and body) within the deadline, its body read
 * as a stream and abandoned past WITNESS_ANSWER_MAX_BYTES (never buffered whole), no redirect
 * followed: a 3xx would send the checkpoint to, and take an answer from, a URL nobody configured.
 */
async function askWitness(fetcher: Fetch, url: string, body: string, deadline: number): Promise<Answer> {
  const left = deadline - Date.now();
  if (left <= 0) return { failed: "unreachable", detail: "the sync's time budget ran out" };
  const signal = AbortSignal.timeout(left);
  let response: Response;
  try {
    // Raced against the deadline too, so the budget holds even for a fetch that ignores its signal.
    const asked = fetcher(url, { method: "POST", body, headers: { "Content-Type": "text/plain; charset=utf-8" }, redirect: "manual", signal });
    response = await Promise.race([asked, untilAborted(signal)]);
  } catch {
    return { failed: "unreachable", detail: signal.aborted ? "the witness did not answer within the sync's time budget" : "could not reach the witness" };
  }
  // (A browser's fetch hides a manual redirect as an "opaqueredirect" of status 0; Node's shows the 3xx.)
  if ((response.status >= 300 && response.status < 400) || response.type === "opaqueredirect") {
    discard(response);
    return { failed: "refused", detail: `HTTP ${response.status || "3xx"}: the witness answered with a redirect, which the city does not follow` };
  }
  const read = await readCapped(response, signal);
  if (read === "too long") return { failed: "refused", detail: `the witness's answer is longer than ${WITNESS_ANSWER_MAX_BYTES} bytes` };
  if (read === "timed out") return { failed: "unreachable", detail: "the witness's answer did not end within the sync's time budget" };
  if (read === "broken") return { failed: "unreachable", detail: "the witness's answer broke off" };
  return { status: response.status, contentType: response.headers.get("content-type") ?? "", text: read };
}

async function readCapped(response: Response, signal: AbortSignal): Promise<string | "too long" | "timed out" | "broken"> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  // Ends a read that a fetch ignoring its signal would leave pending: cancelling resolves it as done.
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (signal.aborted) return "timed out";
      if (done) break;
      size += value.byteLength;
      if (size > WITNESS_ANSWER_MAX_BYTES) {
        stop();
        return "too long";
      }
      chunks.push(value);
    }
  } catch {
    return signal.aborted ? "timed out" : "broken";
  } finally {
    signal.removeEventListener("abort", stop);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
}

function discard(response: Response): void {
  void response.body?.cancel().catch(() => undefined);
}

/** A witness's words as the city repeats them: the first line, each character outside printable ASCII a "?", cut short. */
function echoed(text: string): string {
  const line = text.split("\n", 1)[0]!.replace(/\r$/, "");
  return Array.from(line, (c) => (c >= " " && c <= "~" ? c : "?"))
    .join("")
    .slice(0, WITNESS_ECHO_MAX_CHARS)
    .trim();
}

/** The witnesses with the size each last cosigned (for the card and the plat). */
export async function witnessStates(
  log: LogDescriptor,
  db: Database,
): Promise<Array<{ name: string; vkey: string; url: string; cosigned_size: number | null }>> {
  const witnesses = configuredWitnesses();
  if (witnesses.length === 0) return [];
  const { cosignatures: logCosignatures } = log.tables;
  const rows = await db
    .select({ witness: logCosignatures.witness, size: sql<string>`max(${logCosignatures.size})` })
    .from(logCosignatures)
    .groupBy(logCosignatures.witness);
  const sizes = new Map(rows.map((r) => [r.witness, Number(r.size)]));
  return witnesses.map((w) => ({ name: w.name, vkey: w.vkey, url: w.url, cosigned_size: sizes.get(w.name) ?? null }));
}
