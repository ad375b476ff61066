// npm run log-witness-sync: asks the witnesses of CITY_LOG_WITNESSES to cosign the residency log's
// latest checkpoint (the same work as GET /api/residency/log/witnesses/sync), for any scheduler.
import { getDb } from "@/lib/city/database";
import { syncWitnesses } from "@/lib/city/residency-log";

async function main(): Promise<void> {
  const result = await syncWitnesses(await getDb(), new Date());
  for (const w of result.witnesses) console.log(`${w.witness}: ${w.outcome} (size ${w.size}): ${w.detail}`);
  if (result.witnesses.length === 0) console.log("CITY_LOG_WITNESSES names no witness.");
  process.exit(result.witnesses.some((w) => w.outcome === "refused") ? 1 : 0);
}

void main();
