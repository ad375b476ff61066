// npm run watch-keys -- <base_url> <did> [--state <file>] [--every <seconds>]
// Follows the city's identity log (CITY-KEYS/1) from the outside and prints every key event of one
// DID, verified: each checkpoint's signature against the identity log's key (pinned from
// /city-card.json on first use), the tree recomputed from the tiles with every entry checked
// against its leaf, and consistency with the checkpoint seen last time (kept in the state file,
// with how far the DID's events were printed). Run once (cron) or with --every to keep watching;
// exit 1 when the log does not verify (a wrong key, a changed row, a fork).
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { takeOption } from "./options";
import { verifyTransparencyLog, type VerifierState } from "@/lib/tlog/verifying-client";

const args = process.argv.slice(2);
const option = (name: string) => takeOption(args, name);
const statePath = option("--state") ?? ".watch-keys-state.json";
const every = Number(option("--every") ?? 0);
const [baseUrl, did] = args;
if (!baseUrl || !/^https?:\/\//.test(baseUrl) || !did || !/^[0-9a-f]{64}$/.test(did) || !(every >= 0)) {
  console.error("usage: npm run watch-keys -- <base_url> <did (64 hex)> [--state <file>] [--every <seconds>]");
  process.exit(2);
}

type Watched = { log: VerifierState | null; printed: number };

/** One look: verifies the identity log as it stands and prints the DID's events not printed before. */
async function look(): Promise<boolean> {
  const states: Record<string, Watched> = existsSync(statePath) ? JSON.parse(readFileSync(statePath, "utf8")) : {};
  const key = `${baseUrl} ${did}`;
  const held = states[key] ?? { log: null, printed: 0 };
  const entries: Array<{ index: number; data: Uint8Array }> = [];
  const report = await verifyTransparencyLog(baseUrl!, {
    state: held.log,
    log: "identity_log",
    onEntry: (index, data) => index >= held.printed && entries.push({ index, data }),
  });
  if (!report.ok || !report.state) {
    for (const line of report.lines) console.log(line);
    return false;
  }
  for (const { data } of entries) {
    const row = JSON.parse(new TextDecoder().decode(data)) as { seq: number; did: string; event: string; at: string } & Record<string, unknown>;
    if (row.did !== did) continue;
    const { seq, event, at, did: _did, hash: _hash, prev_hash: _prev, ...facts } = row;
    console.log(`${at} #${seq} ${event} ${JSON.stringify(facts)} (verified: in the signed tree of ${report.state.size})`);
  }
  states[key] = { log: report.state, printed: report.state.size };
  writeFileSync(`${statePath}.tmp`, `${JSON.stringify(states, null, 2)}\n`);
  renameSync(`${statePath}.tmp`, statePath);
  return true;
}

async function main(): Promise<void> {
  for (;;) {
    const ok = await look();
    if (!ok || every === 0) process.exit(ok ? 0 : 1);
    await new Promise((resolve) => setTimeout(resolve, every * 1000));
  }
}

void main();
