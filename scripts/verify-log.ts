// npm run verify-log -- <base_url> [--key <vkey>] [--state <file>]
// Verifies the city's logs from the outside, each one the card lists (`log`, the residency log, and
// `identity_log`, the identity log): the checkpoint's signature against the key given (or pinned on
// first use from /city-card.json), the root recomputed from the tiles with every entry checked, and
// consistency with the checkpoint seen last time (kept in the state file). --key pins the
// residency log's key; the identity log's is pinned from the card on first use.
// npm run verify-log -- <base_url> --receipt <file> [--identity] [--key <vkey>]
// Checks one answer's log receipt instead (the file holds the answer, or its log_receipt or
// identity_log_receipt; --identity picks the identity log's when the answer carries both): the
// entry is read from the log's page, and its proof checked against the receipt's signed checkpoint.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { takeOption } from "./options";
import { leafDataOf, type PublishedLogRow } from "@/lib/city/logs/residency-log";
import { type ReceiptToVerify, timedFetch, verifyReceipt, verifyTransparencyLog, type VerifierState } from "@/lib/tlog/verifying-client";

const args = process.argv.slice(2);
const option = (name: string) => takeOption(args, name);
const vkey = option("--key");
const statePath = option("--state") ?? ".verify-log-state.json";
const receiptPath = option("--receipt");
const identityAt = args.indexOf("--identity");
const identity = identityAt >= 0;
if (identity) args.splice(identityAt, 1);
const baseUrl = args[0];
if (!baseUrl || !/^https?:\/\//.test(baseUrl)) {
  console.error("usage: npm run verify-log -- <base_url> [--key <vkey>] [--state <file> | --receipt <file> [--identity]]");
  process.exit(2);
}
/** One receipt: the entry it names read from the log's page, checked against the receipt's own signed checkpoint. */
async function checkReceipt(path: string): Promise<void> {
  const base = baseUrl!.replace(/\/+$/, "");
  const held = JSON.parse(readFileSync(path, "utf8")) as { log_receipt?: ReceiptToVerify; identity_log_receipt?: ReceiptToVerify } & ReceiptToVerify;
  // The identity log's when asked, or when the answer carries only that one.
  const field = identity || (!held.log_receipt && held.identity_log_receipt) ? "identity_log" : "log";
  const receipt = (field === "identity_log" ? held.identity_log_receipt : held.log_receipt) ?? held;
  const card = (await (await timedFetch(`${base}/city-card.json`)).json()) as Record<string, { verifier_key?: string; tiles?: string } | undefined>;
  const key = vkey ?? card[field]?.verifier_key;
  if (!key) throw new Error(`no key: give --key, or a city whose card publishes ${field}.verifier_key`);
  const pages = (card[field]?.tiles ?? "/api/residency/log/").replace(/\/+$/, "");
  const page = (await (await timedFetch(`${base}${pages}?after=${receipt.seq - 1}&limit=1`)).json()) as { rows?: PublishedLogRow[] };
  const row = page.rows?.[0];
  if (!row || row.seq !== receipt.seq) throw new Error(`the log has no row ${receipt.seq}`);
  const report = verifyReceipt(receipt, leafDataOf(row), key);
  console.log(`${report.ok ? "receipt: valid" : "receipt: REFUSED"}: ${report.reason}`);
  process.exit(report.ok ? 0 : 1);
}

async function main(): Promise<void> {
  if (receiptPath) return checkReceipt(receiptPath);
  const states: Record<string, VerifierState> = existsSync(statePath) ? JSON.parse(readFileSync(statePath, "utf8")) : {};
  // The residency log as before (its state under the base URL), then the identity log when the card lists it.
  const residency = await verifyTransparencyLog(baseUrl!, { vkey, state: states[baseUrl!] ?? null });
  for (const line of residency.lines) console.log(line);
  if (residency.ok && residency.state) states[baseUrl!] = residency.state;
  const card = (await (await timedFetch(`${baseUrl!.replace(/\/+$/, "")}/city-card.json`)).json()) as { identity_log?: unknown };
  let identityOk = true;
  let identitySize: number | null = null;
  if (card.identity_log) {
    const key = `${baseUrl!} identity_log`;
    console.log("identity log:");
    const report = await verifyTransparencyLog(baseUrl!, { state: states[key] ?? null, log: "identity_log" });
    for (const line of report.lines) console.log(`  ${line}`);
    identityOk = report.ok;
    if (report.ok && report.state) {
      states[key] = report.state;
      identitySize = report.state.size;
    }
  } else {
    console.log("identity log: the card lists none");
  }
  if (residency.ok || identitySize !== null) {
    writeFileSync(`${statePath}.tmp`, `${JSON.stringify(states, null, 2)}\n`);
    renameSync(`${statePath}.tmp`, statePath);
  }
  if (residency.ok && residency.state) console.log(`kept: size ${residency.state.size} in ${statePath}`);
  if (identitySize !== null) console.log(`kept: identity log size ${identitySize} in ${statePath}`);
  process.exit(residency.ok && identityOk ? 0 : 1);
}

// A city that does not answer in time (each fetch has 30 s), or a receipt the log cannot show: one line, exit 1.
main().catch((err: unknown) => {
  console.error(`REFUSED: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
