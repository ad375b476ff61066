// npm run witness -- --name <witness name> --log <the city's log vkey> [--log ...] [--key-file witness.key] [--state witness-state.json] [--port 7380]
// A reference C2SP tlog-witness for the city's residency log (lib/tlog/witness.ts):
// verifies the log's signature and consistency with what it cosigned before, refuses a fork and
// says why, cosigns (tlog-cosignature/v1). Prints its vkey for the city's CITY_LOG_WITNESSES.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import * as ed from "@noble/ed25519";
import { createWitness, startWitnessServer, witnessVkey } from "@/lib/tlog/witness";

const args = process.argv.slice(2);
const all = (name: string) => args.flatMap((a, i) => (a === name && args[i + 1] ? [args[i + 1]!] : []));
const one = (name: string, fallback?: string) => all(name)[0] ?? fallback;
const name = one("--name");
const logs = all("--log");
if (!name || logs.length === 0) {
  console.error("usage: npm run witness -- --name <witness name> --log <log vkey> [--key-file f] [--state f] [--port n]");
  process.exit(2);
}
async function main(): Promise<void> {
  const keyFile = one("--key-file", "witness.key")!;
  if (!existsSync(keyFile)) writeFileSync(keyFile, `${Buffer.from(ed.utils.randomSecretKey()).toString("hex")}\n`, { mode: 0o600 });
  const seed = new Uint8Array(Buffer.from(readFileSync(keyFile, "utf8").trim(), "hex"));
  const handle = createWitness({ name: name!, seed, logs, statePath: one("--state", "witness-state.json")! });
  const server = await startWitnessServer(handle, Number(one("--port", "7380")));
  console.log(`witness ${name} listening at ${server.url}`);
  console.log(`CITY_LOG_WITNESSES entry: ${witnessVkey(name!, seed)} ${server.url}`);
}

void main();
