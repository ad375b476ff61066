// npm run log-witness-sync: asks the witnesses of CITY_LOG_WITNESSES to cosign the latest checkpoint
// of each log, the residency log's and the identity log's (the same work as GET
// /api/residency/log/witnesses/sync and GET /api/identity/log/witnesses/sync), for any scheduler.
import { getDb } from "@/lib/city/database";
import { identityLog } from "@/lib/city/logs/identity-log";
import { residencyLog } from "@/lib/city/logs/residency-log";

async function main(): Promise<void> {
  const db = await getDb();
  let refused = false;
  for (const log of [residencyLog, identityLog]) {
    const result = await log.syncWitnesses(db, new Date());
    for (const w of result.witnesses) console.log(`${log.log.name}: ${w.witness}: ${w.outcome} (size ${w.size}): ${w.detail}`);
    refused ||= result.witnesses.some((w) => w.outcome === "refused");
    if (result.witnesses.length === 0) {
      console.log("CITY_LOG_WITNESSES names no witness.");
      break;
    }
  }
  process.exit(refused ? 1 : 0);
}

void main();
