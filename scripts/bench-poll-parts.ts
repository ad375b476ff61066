// npx tsx scripts/bench-poll-parts.ts [--citizens 1000] [--runs 3000] [--day-log-rows 0]
// What one poll is made of, part by part, on PostgreSQL (a fresh database, dropped after): the
// CPU of the one backend that runs each part `runs` times (read from /proc, so other load on the
// machine does not count), and the JavaScript of this process for the poll's own work (statement
// building, the answer's schema check, JSON). BENCHMARKS.md: what the poll costs above the floor.
import { readFileSync } from "node:fs";
import { sql, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import * as schema from "@/db/schema";
import type { Database } from "@/db/client";
import { openPg } from "@/db/client";
import { executePrepared, rowsOf } from "@/db/sql";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { citizenForToken, hashCredential, mintCredential } from "@/lib/city/keys";
import { pollStatement, pollWhileBound, deltaLaterals, returnDeltaColumns } from "@/lib/city/live";
import { tideSql } from "@/lib/city/census";
import { ReturnOutput } from "@/lib/doors/declarations/live/live";
import { seedCity } from "./bench-seed";
import { optionOr } from "./options";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => optionOr(args, name, fallback);
const citizens = Number(option("citizens", "1000"));
const runs = Number(option("runs", "3000"));
// More residency log rows in the last 24 hours than the seed's (arrivals and departures of a busy day): the tide's cost.
const dayLogRows = Number(option("day-log-rows", "0"));
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TICKS = 100;

function backendMs(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

/** Backend CPU ms per run of `work` (one statement each), and this process's (Drizzle and the driver), after a warm-up. */
async function backendCpu(pid: number, work: () => Promise<unknown>): Promise<{ backend: number; client: number }> {
  for (let i = 0; i < 200; i++) await work();
  const before = backendMs(pid);
  const client = process.cpuUsage();
  for (let i = 0; i < runs; i++) await work();
  const used = process.cpuUsage(client);
  return { backend: (backendMs(pid) - before) / runs, client: (used.user + used.system) / 1000 / runs };
}

/** This process's CPU ms per run of `work` (synchronous JavaScript), after a warm-up. */
function processCpu(work: () => unknown): number {
  for (let i = 0; i < 500; i++) work();
  const before = process.cpuUsage();
  for (let i = 0; i < runs; i++) work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / runs;
}

async function main(): Promise<void> {
  const name = `city_poll_parts_${process.pid}`;
  const admin = await openPg(serverUrl);
  await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const setup = await openPg(url.toString());
  // One connection, so one backend runs every part.
  const pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
  try {
    await upgradeDatabase(setup);
    await seedCity(setup.db, citizens);
    const token = mintCredential("secret");
    const [{ me }] = rowsOf<{ me: string }>(await setup.db.execute(sql`SELECT did AS me FROM citizens WHERE bed_id IS NOT NULL ORDER BY did LIMIT 1`)) as [
      { me: string },
    ];
    await setup.db.execute(sql`UPDATE citizens SET secret_hash = ${hashCredential(token)}, last_seen_at = now() WHERE did = ${me}`);
    if (dayLogRows > 0)
      await setup.db.execute(sql`
        INSERT INTO residency_log (seq, event, did, at, details, prev_hash, hash)
        SELECT (SELECT max(seq) FROM residency_log) + i, 'exit', 'day-' || i, now() - make_interval(secs => i * (86000.0 / ${dayLogRows}::int)::float8), '{}',
               repeat('0', 64), 'd' || lpad(to_hex(i), 63, '0')
        FROM generate_series(1, ${dayLogRows}) AS i`);
    await setup.db.execute(sql`VACUUM ANALYZE`);
    const db = drizzle({ client: pool, schema }) as unknown as Database;
    const [{ pid }] = rowsOf<{ pid: number }>(await db.execute(sql`SELECT pg_backend_pid() AS pid`)) as [{ pid: number }];
    const asked = { schedule: null };
    const seenBefore = () => new Date(Date.now() - 60_000);
    const one = (columns: SQL) => () => executePrepared(db, sql`SELECT ${columns}`);
    const parts: [string, () => Promise<unknown>][] = [
      ["the caller's look-up (seen within the minute: no write)", () => citizenForToken(db, token, new Date(), seenBefore())],
      ["the poll's statement, whole (pollWhileBound)", () => pollWhileBound(db, me, asked, new Date())],
      ["SELECT 1 (a named prepared statement: the protocol's floor)", one(sql`1`)],
      ["the tide alone", () => executePrepared(db, sql`SELECT ${tideSql(new Date())} AS tide`)],
      [
        "the tide counted over the log, as before migration 0040",
        () =>
          executePrepared(
            db,
            sql`SELECT count(*)::int AS tide FROM residency_log l WHERE l.at > ${new Date(Date.now() - 86_400_000).toISOString()}::timestamptz`,
          ),
      ],
      [
        "the delta's columns alone (no writes, no tide)",
        () =>
          executePrepared(
            db,
            sql`SELECT ${returnDeltaColumns(me, sql`${new Date(Date.now() - 60_000).toISOString()}::timestamptz`, new Date())} FROM (SELECT 1) one ${deltaLaterals(me)}`,
          ),
      ],
      [
        "the schedule's upsert alone (polled_at moves)",
        () =>
          executePrepared(
            db,
            sql`INSERT INTO live_schedules (did, wake_on, return_after, polled_at) VALUES (${me}, NULL, NULL, ${new Date().toISOString()}::timestamptz)
              ON CONFLICT (did) DO UPDATE SET wake_on = excluded.wake_on, return_after = excluded.return_after, polled_at = excluded.polled_at`,
          ),
      ],
    ];
    console.log(
      `${citizens} citizens, ${dayLogRows} more log rows in the last day, ${runs} runs each, CPU per run: the PostgreSQL backend's, and this process's (Drizzle and node-postgres):`,
    );
    for (const [label, work] of parts) {
      const cpu = await backendCpu(pid, work);
      console.log(`- ${label}: backend ${cpu.backend.toFixed(3)} ms, client ${cpu.client.toFixed(3)} ms`);
    }

    const polled = (await pollWhileBound(db, me, asked, new Date()))!;
    const answer = {
      now_utc: new Date().toISOString(),
      protocol: "CITY-DID/1",
      door: "gate",
      write: "POST",
      alias: "/api/live",
      note: "A poll.",
      tide: polled.tide,
      cannot_wake_host: true,
      delivery: { mode: "poll" },
      schedule: null,
      cursor: polled.cursor,
      did: me,
      residency_status: "bound",
      bed_id: polled.bedId,
      action: "return",
      returned: false,
      nonce: polled.nonce,
      nonceTtlSeconds: 600,
      nonceSource: "gate_nonces",
      delta: polled.delta,
    };
    const { dialect } = db as unknown as { dialect: { sqlToQuery: (s: SQL) => { sql: string } } };
    console.log(`\nthis process's CPU per run (JavaScript):`);
    console.log(
      `- the poll's statement built and turned to text (pollStatement, sqlToQuery): ${processCpu(() => dialect.sqlToQuery(pollStatement(me, asked, new Date()).statement)).toFixed(3)} ms`,
    );
    const checked = ReturnOutput.safeParse(answer);
    if (!checked.success) throw new Error(`the sample answer is outside ReturnOutput: ${checked.error.message}`);
    console.log(`- the answer checked against its schema (ReturnOutput.safeParse): ${processCpu(() => ReturnOutput.safeParse(answer)).toFixed(3)} ms`);
    console.log(`- the answer as JSON (JSON.stringify): ${processCpu(() => JSON.stringify(answer)).toFixed(3)} ms`);
    console.log(`- the credential's hash (hashCredential): ${processCpu(() => hashCredential(token)).toFixed(3)} ms`);
  } finally {
    await pool.end();
    await setup.close();
    await admin.db.execute(sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    await admin.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
