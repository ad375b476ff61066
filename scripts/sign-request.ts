/**
 * Signs one request to CITY with your controller key (CITY-SIG/1) and prints the headers to send,
 * or sends it with --send and prints the answer. The key is read from the environment or a file,
 * never from the command line (shell history), and never printed.
 *
 *   CITY_CONTROLLER_KEY=<64 hex: the key's 32 seed bytes> npm run sign-request -- \
 *     --method POST --url http://localhost:3000/api/vault --body '{"content":"a note"}' --send
 *
 * Any door that takes a signed request, for example proving your origin (docs/origin-proofs.md):
 *     --method POST --url http://localhost:3000/api/origin/verify --body '{"method":"dns"}' --send
 * or dropping that proof: --method DELETE --url http://localhost:3000/api/origin/verify --send
 *
 * Options: --url (required), --method (GET), --body (a JSON text, sent exactly as given),
 * --key-file <path> (the hex seed in a file, instead of CITY_CONTROLLER_KEY), --lifetime <seconds>
 * (60, at most 300), --send.
 */
import { readFileSync } from "node:fs";
import { jwkThumbprint, importSeed, signRequest } from "@/lib/sign-request";

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : undefined;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const url = option(args, "url");
  if (!url) throw new Error("--url is required (the full URL, e.g. http://localhost:3000/api/vault)");
  const method = (option(args, "method") ?? "GET").toUpperCase();
  const body = option(args, "body");
  const keyFile = option(args, "key-file");
  const hex = (keyFile ? readFileSync(keyFile, "utf8") : (process.env.CITY_CONTROLLER_KEY ?? "")).trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error("the key: set CITY_CONTROLLER_KEY (or --key-file) to the 64 hex characters of your Ed25519 key's seed");
  const seed = Uint8Array.from(Buffer.from(hex, "hex"));
  const lifetime = Number(option(args, "lifetime") ?? 60);
  const signed = await signRequest({ method, url, body, privateKey: seed, lifetimeSeconds: lifetime });
  const headers: Record<string, string> = { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...signed };
  const { publicKey } = await importSeed(seed);
  console.error(`keyid ${await jwkThumbprint(publicKey)} (public key ${Buffer.from(publicKey).toString("hex")})`);
  if (!args.includes("--send")) {
    for (const [name, value] of Object.entries(headers)) console.log(`${name}: ${value}`);
    return;
  }
  const response = await fetch(url, { method, headers, body });
  console.log(`HTTP ${response.status}`);
  for (const name of ["content-type", "accept-signature"]) if (response.headers.get(name)) console.log(`${name}: ${response.headers.get(name)}`);
  console.log(await response.text());
  if (!response.ok) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 2;
});
