import { desc, eq, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { logCosignatures } from "@/db/schema";
import { env } from "@/lib/env";
import { COSIGNATURE, parseNote, parseVkey, type Verifier, validCosignatures } from "./log-note";
import { consistencyProof, currentCheckpoint } from "./log-store";

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

/**
 * Asks every witness to cosign the latest checkpoint (tlog-witness add-checkpoint, with the
 * consistency proof from the size it last cosigned), verifies each cosignature against the
 * witness's key and keeps it. Runs outside any write's transaction: each network call is bounded
 * by what is left of `budgetMs`, and a cosignature is one INSERT.
 */
export async function syncWitnesses(db: Database, now: Date, options: { budgetMs?: number; fetch?: Fetch; witnesses?: Witness[] } = {}): Promise<{ size: number; witnesses: SyncOutcome[] }> {
  const deadline = Date.now() + (options.budgetMs ?? 8000);
  const witnesses = options.witnesses ?? configuredWitnesses();
  const checkpoint = await currentCheckpoint(db, now);
  const outcomes = await Promise.all(witnesses.map((w) => syncOne(db, w, checkpoint, deadline, options.fetch ?? fetch)));
  return { size: checkpoint.size, witnesses: outcomes };
}

async function syncOne(db: Database, witness: Witness, checkpoint: { size: number; note: string }, deadline: number, fetcher: Fetch): Promise<SyncOutcome> {
  const said = (outcome: SyncOutcome["outcome"], detail: string): SyncOutcome => ({ witness: witness.name, outcome, size: checkpoint.size, detail });
  const [last] = await db.select({ size: logCosignatures.size }).from(logCosignatures).where(eq(logCosignatures.witness, witness.name)).orderBy(desc(logCosignatures.size)).limit(1);
  if (last?.size === checkpoint.size) return said("current", "already cosigned this size");
  if (checkpoint.size === 0) return said("current", "the log is empty");
  let old = last?.size ?? 0;
  // A 409 names the size the witness last cosigned (it may know a size we did not keep): retry once from there.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (old > checkpoint.size) return said("refused", `the witness has cosigned size ${old}, larger than the city's ${checkpoint.size}`);
    const proof = await consistencyProof(db, old, checkpoint.size);
    const body = `old ${old}\n${proof.map((p) => `${p}\n`).join("")}\n${checkpoint.note}`;
    const left = deadline - Date.now();
    if (left <= 0) return said("unreachable", "the sync's time budget ran out");
    let response: Response;
    try {
      response = await fetcher(`${witness.url}/add-checkpoint`, { method: "POST", body, headers: { "Content-Type": "text/plain; charset=utf-8" }, signal: AbortSignal.timeout(left) });
    } catch (err) {
      return said("unreachable", err instanceof Error && err.name === "TimeoutError" ? "timed out" : "could not reach the witness");
    }
    const text = (await response.text()).slice(0, 4096);
    if (response.status === 409 && (response.headers.get("content-type") ?? "").startsWith("text/x.tlog.size") && /^(0|[1-9][0-9]*)\n$/.test(text) && attempt === 0) {
      old = Number(text.trim());
      continue;
    }
    if (response.status !== 200) return said("refused", `HTTP ${response.status}: ${text.trim().slice(0, 300)}`);
    let valid: Array<{ line: string; timestamp: number }> = [];
    try {
      valid = validCosignatures(parseNote(checkpoint.note + text), witness.verifier);
    } catch {
      valid = [];
    }
    if (valid.length === 0) return said("refused", "the witness answered no cosignature that verifies against its key");
    const newest = valid.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
    await db
      .insert(logCosignatures)
      .values({ witness: witness.name, size: checkpoint.size, line: newest.line, cosignedAt: new Date(newest.timestamp * 1000) })
      .onConflictDoNothing();
    return said("cosigned", `cosigned at ${new Date(newest.timestamp * 1000).toISOString()}`);
  }
  return said("refused", "the witness kept naming another size");
}

/** The witnesses with the size each last cosigned (for the card and the plat). */
export async function witnessStates(db: Database): Promise<Array<{ name: string; vkey: string; url: string; cosigned_size: number | null }>> {
  const witnesses = configuredWitnesses();
  if (witnesses.length === 0) return [];
  const rows = await db.select({ witness: logCosignatures.witness, size: sql<string>`max(${logCosignatures.size})` }).from(logCosignatures).groupBy(logCosignatures.witness);
  const sizes = new Map(rows.map((r) => [r.witness, Number(r.size)]));
  return witnesses.map((w) => ({ name: w.name, vkey: w.vkey, url: w.url, cosigned_size: sizes.get(w.name) ?? null }));
}
