// npm run verify-log -- <base_url> [--key <vkey>] [--state <file>]
// Verifies the city's residency log from the outside: the checkpoint's signature against the key
// given (or pinned on first use from /city-card.json), the root recomputed from the tiles with
// every entry checked, and consistency with the checkpoint seen last time (kept in the state file).
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { verifyTransparencyLog, type VerifierState } from "@/lib/tlog/verifying-client";

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
const baseUrl = args[0];
if (!baseUrl || !/^https?:\/\//.test(baseUrl)) {
  console.error("usage: npm run verify-log -- <base_url> [--key <vkey>] [--state <file>]");
  process.exit(2);
}
async function main(): Promise<void> {
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
