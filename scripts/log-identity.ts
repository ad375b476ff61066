// npm run log-identity [-- --record | --adopt]
// Each log's identity (the residency log's, then the identity log's): the origin
// and key its checkpoints are signed under are kept in the database with the tree (tables
// log_identity, identity_log_identity, written once). This shows the recorded identity beside this
// configuration's and checks every held checkpoint against it; the exit code is the worse of the two.
//   (no flag)  the report; exit 0 when this configuration is the log's identity, 1 when it is not,
//              2 when the database records none yet
//   --record   records this configuration's identity when the database has none (refused unless
//              the log's latest checkpoint verifies under it: the tree's signer is the identity)
//   --adopt    prints the configuration that adopts the database's identity (CITY_LOG_ORIGIN or
//              CITY_IDENTITY_LOG_ORIGIN, and
//              which signing key), for every instance of the city
import { getDb } from "@/lib/city/database";
import { signingKeys } from "@/db/schema";
import { identityLog } from "@/lib/city/logs/identity-log";
import { residencyLog } from "@/lib/city/logs/residency-log";
import type { BoundLog } from "@/lib/city/logs/transparency-log";

const args = new Set(process.argv.slice(2));
const known = new Set(["--record", "--adopt"]);
const unknown = [...args].filter((a) => !known.has(a));
if (unknown.length > 0 || (args.has("--record") && args.has("--adopt"))) {
  console.error("usage: npm run log-identity [-- --record | --adopt]");
  process.exit(2);
}

async function main(): Promise<number> {
  let code = 0;
  for (const log of [residencyLog, identityLog]) {
    console.log(`${log === residencyLog ? "" : "\n"}the ${log.log.name}:`);
    code = Math.max(code, await report(log));
  }
  return code;
}

async function report(log: Pick<BoundLog, "logIdentityReport" | "log">): Promise<number> {
  const db = await getDb();
  const report = await log.logIdentityReport(db, { record: args.has("--record") });
  const { check } = report;
  const show = (label: string, id: { origin: string; keyId: string; vkey: string }) =>
    console.log(`${label}: origin ${id.origin}, key id ${id.keyId}\n  vkey ${id.vkey}`);
  if (check.identity) show(`the log's identity (recorded ${check.identity.recordedAt.toISOString()})`, check.identity);
  else console.log("the log's identity: none recorded yet");
  show("this configuration", check.configured);
  console.log(
    `checkpoints held: ${report.checkpoints}; not verifying under ${check.identity ? "the log's identity" : "this configuration"}: ${report.foreignCheckpoints}${report.firstForeignSize !== null ? ` (first at size ${report.firstForeignSize})` : ""}`,
  );
  if (check.agrees) {
    console.log(
      check.recordedNow ? "recorded: this configuration is now the log's identity." : "this configuration is the log's identity: this instance appends.",
    );
    return 0;
  }
  if (!check.identity) {
    console.log(`not recorded: ${check.reason}.`);
    if (report.checkpoints === 0)
      console.log("the first instance that starts or writes records its own; `npm run log-identity -- --record` records this configuration's now.");
    else
      console.log(
        "run `npm run log-identity -- --record` with the configuration whose key signed the latest checkpoint; until then every instance that cannot verify it refuses to append.",
      );
    return 2;
  }
  console.log(`disagrees: ${check.reason}. An instance so configured refuses to append (503 log_identity_mismatch).`);
  if (args.has("--adopt")) {
    const identity = check.identity;
    console.log("\nto adopt the log's identity, set on every instance:");
    console.log(`  ${log.log.originVariable}=${identity.origin}`);
    const [kept] = await db.select({ jwk: signingKeys.privateJwk }).from(signingKeys).limit(1);
    const keptX = kept ? Buffer.from(String((kept.jwk as Record<string, string>).x ?? ""), "base64url").toString("base64") : null;
    if (identity.publicKey === check.configured.publicKey) console.log("  (the signing key already is the log's)");
    else if (keptX === identity.publicKey) console.log("  CITY_SIGNING_KEY unset: the key kept in the database (signing_keys) is the log's");
    else
      console.log(
        `  CITY_SIGNING_KEY=<the Ed25519 private key whose public key is ${identity.publicKey}>: neither the configured key nor the one kept in the database is the log's`,
      );
  } else {
    console.log("`npm run log-identity -- --adopt` prints the configuration that adopts it.");
  }
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`log-identity failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(3);
  },
);
