// npx tsx scripts/bench-explain.ts [--citizens 100000]
// The return delta's plan on PostgreSQL in a city of N citizens (a fresh database, dropped after):
// one inbox with 10,000 unread messages, a fifth of the beds unseen for two days. Prints the plan
// with EXPLAIN (ANALYZE, BUFFERS) and the delta, so the reader sees which reads touch what.
import { sql } from "drizzle-orm";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { openPg } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { WAKE_ON } from "@/db/schema";
import { returnDelta, returnDeltaQuery } from "@/lib/city/live";
import { seedCity } from "./bench-seed";

const args = process.argv.slice(2);
const at = args.indexOf("--citizens");
const citizens = Number(at >= 0 ? args[at + 1] : "100000");
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

async function main(): Promise<void> {
  const name = `city_explain_${process.pid}`;
  const admin = await openPg(serverUrl);
  await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const open = await openPg(url.toString());
  try {
    await upgradeDatabase(open);
    await seedCity(open.db, citizens);
    const did = (i: number) => sql.raw(`encode(sha256(convert_to('bench-${i}', 'UTF8')), 'hex')`);
    await open.db.execute(
      sql`INSERT INTO messages (from_did, to_did, body, created_at) SELECT ${did(2)}, ${did(1)}, 'unread ' || g, now() FROM generate_series(1, 10000) g`,
    );
    await open.db.execute(sql`UPDATE citizens SET last_seen_at = now() - interval '2 days' WHERE bed_id IS NOT NULL AND random() < 0.2`);
    await open.db.execute(sql`VACUUM ANALYZE`);
    const [me] = rowsOf<{ did: string }>(await open.db.execute(sql`SELECT ${did(1)} AS did`));
    const since = new Date(Date.now() - 60_000);
    for (let i = 0; i < 3; i++) await returnDelta(open.db, me!.did, since, WAKE_ON, new Date()); // warm
    const plan = rowsOf<{ "QUERY PLAN": string }>(
      await open.db.execute(sql`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${returnDeltaQuery(me!.did, since, new Date())}`),
    );
    console.log(plan.map((r) => r["QUERY PLAN"]).join("\n"));
    const started = performance.now();
    const runs = 50;
    let delta;
    for (let i = 0; i < runs; i++) delta = await returnDelta(open.db, me!.did, since, WAKE_ON, new Date());
    console.log(`\n${citizens} citizens: ${((performance.now() - started) / runs).toFixed(2)} ms per delta (mean of ${runs}, one statement each)`);
    console.log(JSON.stringify(delta));
  } finally {
    await open.close();
    await admin.db.execute(sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    await admin.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
