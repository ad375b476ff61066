// npx tsx scripts/bench-poll.ts [--citizens 1000] [--posts 300000] [--polls 200] [--plan]
// The poll (POST /api/live { action: "return" } of a bound citizen: lib/city/live/live.ts pollWhileBound,
// the named prepared statement the server sends) on PostgreSQL, first in the bench city without
// room posts, then after adding `--posts` old room posts (older than the delta's seven-day window,
// a tenth of them replies, written in turn by the bench's citizens) and 2,000 posts of news. The
// polling citizen (bench-1) wrote 40 room posts twenty days ago, replied to by others (5 ten days
// ago, 4 three days ago, 3 half an hour ago), has a lantern, and in the big city also its turn of
// the old posts (342 room posts of its own in all at 300,000 and 1,000 citizens). For each city and cursor (none: counted
// from a binding sixty days old; sixty days old; a minute old) it prints what the poll's statement
// reads (EXPLAIN (ANALYZE, BUFFERS) EXECUTE, generic and custom plans: rows of posts, buffers, how
// posts were scanned), the measure that does not move with the machine's load, and the p50 and
// p95 of `--polls` polls through the driver (named statement, so the generic plan once
// PostgreSQL keeps it), which does. BENCHMARKS.md has the figures.
import { sql } from "drizzle-orm";
import { type Database, openPg } from "@/db/client";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { rowsOf } from "@/db/sql";
import { encodePollCursor, pollWhileBound } from "@/lib/city/live";
import { capturePollQuery, preparedPlanText, preparedReadsOf } from "@/tests/support/poll-plan";
import { seedCity } from "./bench-seed";
import { optionOr } from "./options";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => optionOr(args, name, fallback);
const citizens = Number(option("citizens", "1000"));
const roomPosts = Number(option("posts", "300000"));
const polls = Number(option("polls", "200"));
const showPlans = args.includes("--plan");
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DAY = 86_400_000;

const didOf = (i: string) => sql.raw(`encode(sha256(convert_to('bench-' || ${i}, 'UTF8')), 'hex')`);

/** The polling citizen's own room posts, the replies to them, and its lantern (bench-1). */
async function seedCaller(db: Database, me: string): Promise<void> {
  await db.execute(sql`
    INSERT INTO posts (board, room, did, body, created_at)
    SELECT 'room', 'room-7', ${me}, 'my room post ' || i, now() - interval '20 days' + make_interval(secs => i) FROM generate_series(1, 40) AS i`);
  for (const [replies, age] of [
    [5, "10 days"],
    [4, "3 days"],
    [3, "30 minutes"],
  ] as const) {
    await db.execute(sql`
      INSERT INTO posts (board, room, did, body, reply_to, created_at)
      SELECT 'room', 'room-7', ${didOf("2")}, 'a reply to you', p.id, now() - ${age}::interval
      FROM (SELECT id FROM posts WHERE did = ${me} AND board = 'room' ORDER BY id LIMIT ${replies}) p`);
  }
  await db.execute(sql`INSERT INTO lanterns (did, keyword, created_at) VALUES (${me}, 'moonlit', now() - interval '30 days')`);
}

/** `count` old room posts by the bench's citizens (40 to 8 days ago), a tenth of them replies, and 2,000 of news. */
async function seedRoomPosts(db: Database, count: number): Promise<void> {
  const originals = Math.round(count * 0.9);
  await db.execute(sql`
    INSERT INTO posts (board, room, did, body, created_at)
    SELECT 'room', 'room-' || (i % 100), ${didOf(`(i % ${citizens} + 1)`)}, 'an old room post ' || i,
           now() - interval '40 days' + make_interval(secs => i * (32 * 86400 / ${originals}))
    FROM generate_series(1, ${originals}) AS i`);
  await db.execute(sql`
    INSERT INTO posts (board, room, did, body, reply_to, created_at)
    SELECT 'room', p.room, ${didOf(`(p.id % ${citizens} + 1)`)}, 'an old reply to ' || p.id, p.id, p.created_at + interval '1 minute'
    FROM posts p WHERE p.board = 'room' AND p.body LIKE 'an old room post%' AND p.id % 9 = 0 ORDER BY p.id LIMIT ${count - originals}`);
  await db.execute(sql`
    INSERT INTO posts (board, room, did, body, created_at)
    SELECT 'room', 'room-' || (i % 100), ${didOf(`(i % ${citizens} + 1)`)}, 'news ' || i, now() - interval '2 days' + make_interval(secs => i * 60)
    FROM generate_series(1, 2000) AS i`);
  await db.execute(sql`VACUUM ANALYZE posts`);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function measure(db: Database, me: string, label: string): Promise<void> {
  const [{ n }] = rowsOf<{ n: number }>(await db.execute(sql`SELECT count(*)::int AS n FROM posts`)) as [{ n: number }];
  const [{ pages }] = rowsOf<{ pages: number }>(await db.execute(sql`SELECT pg_relation_size('posts')::bigint / 8192 AS pages`)) as [{ pages: number }];
  console.log(`\n## ${label}: ${n} posts (${pages} pages of heap)`);
  const cursors: Record<string, string | undefined> = {
    none: undefined,
    "60 days": encodePollCursor(new Date(Date.now() - 60 * DAY)),
    "1 minute": encodePollCursor(new Date(Date.now() - 60_000)),
  };
  for (const [name, cursor] of Object.entries(cursors)) {
    // Without a cursor the poll counts from the last poll, else the binding: none, sixty days ago.
    await db.execute(sql`DELETE FROM live_schedules WHERE did = ${me}`);
    const query = await capturePollQuery(db, (spy) => pollWhileBound(spy, me, { cursor, schedule: null }, new Date()));
    for (const plan of ["generic", "custom"] as const) {
      const reads = await preparedReadsOf(db, query, plan);
      if (showPlans) console.log(await preparedPlanText(db, query, plan));
      console.log(
        `cursor ${name.padEnd(8)} ${plan.padEnd(7)}: ${String(reads.postsRows).padStart(7)} rows of posts, ${String(reads.buffers).padStart(5)} buffers, seq scans of posts ${reads.postsSeqScans}; ${reads.postsScans.join(", ")}`,
      );
    }
    if (cursor === undefined) continue; // a timed poll moves the last poll: only cursors repeat
    const times: number[] = [];
    for (let i = 0; i < polls; i++) {
      const started = performance.now();
      const poll = await pollWhileBound(db, me, { cursor, schedule: null }, new Date());
      times.push(performance.now() - started);
      if (!poll) throw new Error("the bench citizen is not bound");
    }
    times.sort((a, b) => a - b);
    console.log(
      `cursor ${name.padEnd(8)} timed  : p50 ${percentile(times, 0.5).toFixed(2)} ms, p95 ${percentile(times, 0.95).toFixed(2)} ms (${polls} polls through the driver)`,
    );
  }
}

async function main(): Promise<void> {
  const name = `city_bench_poll_${process.pid}`;
  const admin = await openPg(serverUrl);
  await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const open = await openPg(url.toString());
  try {
    await upgradeDatabase(open);
    await seedCity(open.db, citizens);
    const [{ me }] = rowsOf<{ me: string }>(await open.db.execute(sql`SELECT ${didOf("1")} AS me`)) as [{ me: string }];
    await open.db.execute(sql`UPDATE citizens SET bound_at = now() - interval '60 days' WHERE did = ${me}`);
    await seedCaller(open.db, me);
    await open.db.execute(sql`VACUUM ANALYZE`);
    await measure(open.db, me, `${citizens} citizens, no room posts but the caller's`);
    const started = performance.now();
    await seedRoomPosts(open.db, roomPosts);
    console.log(`\n(seeded ${roomPosts} room posts and 2,000 of news in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
    await measure(open.db, me, `${citizens} citizens, ${roomPosts} old room posts and 2,000 of news`);
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
