// npm run verify-log -- <base_url> [--key <vkey>] [--state <file>]
// Verifies the city's residency log from the outside: the checkpoint's signature against the key
// given (or pinned on first use from /city-card.json), the root recomputed from the tiles with
// every entry checked, and consistency with the checkpoint seen last time (kept in the state file).
// npm run verify-log -- <base_url> --receipt <file> [--key <vkey>]
// Checks one answer's log receipt instead (the file holds the answer, or its log_receipt): the
// entry is read from the log's page, and its proof checked against the receipt's signed checkpoint.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { leafDataOf, type PublishedLogRow } from "@/lib/city/residency-log";
import { type ReceiptToVerify, verifyReceipt, verifyTransparencyLog, type VerifierState } from "@/lib/tlog/verifying-client";

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
};
const vkey = option("--key");
const statePath = option("--state") ?? ".verify-log-state.json";
const receiptPath = option("--receipt");
const baseUrl = args[0];
if (!baseUrl || !/^https?:\/\//.test(baseUrl)) {
  console.error("usage: npm run verify-log -- <base_url> [--key <vkey>] [--state <file> | --receipt <file>]");
  process.exit(2);
}
/** One receipt: the entry it names read from the log's page, checked against the receipt's own signed checkpoint. */
async function checkReceipt(path: string): Promise<void> {
  const base = baseUrl!.replace(/\/+$/, "");
  const held = JSON.parse(readFileSync(path, "utf8")) as { log_receipt?: ReceiptToVerify } & ReceiptToVerify;
  const receipt = held.log_receipt ?? held;
  const key = vkey ?? ((await (await fetch(`${base}/city-card.json`)).json()) as { log?: { verifier_key?: string } }).log?.verifier_key;
  if (!key) throw new Error("no key: give --key, or a city whose card publishes log.verifier_key");
  const page = (await (await fetch(`${base}/api/residency/log?after=${receipt.seq - 1}&limit=1`)).json()) as { rows?: PublishedLogRow[] };
  const row = page.rows?.[0];
  if (!row || row.seq !== receipt.seq) throw new Error(`the log has no row ${receipt.seq}`);
  const report = verifyReceipt(receipt, leafDataOf(row), key);
  console.log(`${report.ok ? "receipt: valid" : "receipt: REFUSED"}: ${report.reason}`);
  process.exit(report.ok ? 0 : 1);
}

async function main(): Promise<void> {
  if (receiptPath) return checkReceipt(receiptPath);
  const states: Record<string, VerifierState> = existsSync(statePath) ? JSON.parse(readFileSync(statePath, "utf8")) : {};
  const report = await verifyTransparencyLog(baseUrl!, { vkey, state: states[baseUrl!] ?? null });
  for (const line of report.lines) console.log(line);
  if (report.ok && report.state) {
    states[baseUrl!] = report.state;
    writeFileSync(`${statePath}.tmp`, `${JSON.stringify(states, null, 2)}\n`);
    renameSync(`${statePath}.tmp`, statePath);
    console.log(`kept: size ${report.state.size} in ${statePath}`);
  }
  process.exit(report.ok ? 0 : 1);
}

void main();
