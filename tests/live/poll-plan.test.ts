import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { encodePollCursor, pollStatement } from "@/lib/city/live";
import { describeOnDatabases } from "../support/databases";
import { seedCity } from "@/scripts/bench-seed";
import { admit } from "../support/gate";
import { preparedReadsOf } from "../support/poll-plan";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

// The city of issue 29 item 4: 300,000 room posts by 3,000 posters, all older than the delta's
// window (seven days), a tenth of them replies; then the news: 2,000 room posts of the last two
// days. The caller wrote 40 room posts twenty days ago; others replied to them 5 times ten days
// ago, 4 times three days ago and 3 times half an hour ago; its lantern (lit thirty days ago)
// matches 2 posts of ten days ago and 1 of an hour ago.
const OLD_POSTS = 270_000;
const OLD_REPLIES = 30_000;
const RECENT_POSTS = 2_000;
const MY_POSTS = 40;
// The bench city's plaza posts (one per five of its 3,000 citizens), written as the test starts.
const SEEDED_PLAZA = 600;
// Every post the window holds: the recent posts, the plaza's, the 7 replies to the caller, the 1 lantern match.
const NEWS_IN_WINDOW = RECENT_POSTS + SEEDED_PLAZA + 7 + 1;

describeOnDatabases("the poll's plan in a city of 300,000 posts", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("reads no table by sequential scan (posts nor any other but the one-row census counts): what it reads is the caller's own rows and the news of the window, whatever the cursor and whichever plan", async (ctx) => {
    if (t().driver === "pglite") return ctx.skip("the plan that matters is real PostgreSQL's (PGlite runs the same planner, 300,000 rows slowly)");
    const me = await admit();
    const other = (i: string) => sql.raw(`md5('poster-' || ${i}) || md5('poster-' || ${i})`);
    await t().db.execute(sql`
      INSERT INTO posts (board, room, did, body, created_at)
      SELECT 'room', 'room-' || (i % 100), ${other("(i % 3000)")}, 'an old room post ' || i, now() - interval '40 days' + make_interval(secs => i * 8)
      FROM generate_series(1, ${OLD_POSTS}) AS i`);
    await t().db.execute(sql`
      INSERT INTO posts (board, room, did, body, reply_to, created_at)
      SELECT 'room', p.room, ${other("(p.id % 2999 + 1)")}, 'an old reply to ' || p.id, p.id, p.created_at + interval '1 minute'
      FROM posts p WHERE p.board = 'room' AND p.id % 9 = 0 ORDER BY p.id LIMIT ${OLD_REPLIES}`);
    await t().db.execute(sql`
      INSERT INTO posts (board, room, did, body, created_at)
      SELECT 'room', 'room-7', ${me.did}, 'my room post ' || i, now() - interval '20 days' + make_interval(secs => i)
      FROM generate_series(1, ${MY_POSTS}) AS i`);
    for (const [replies, age] of [
      [5, "10 days"],
      [4, "3 days"],
      [3, "30 minutes"],
    ] as const) {
      await t().db.execute(sql`
        INSERT INTO posts (board, room, did, body, reply_to, created_at)
        SELECT 'room', 'room-7', ${other("'replier'")}, 'a reply to you', p.id, now() - ${age}::interval
        FROM (SELECT id FROM posts WHERE did = ${me.did} ORDER BY id LIMIT ${replies}) p`);
    }
    await t().db.execute(sql`
      INSERT INTO posts (board, room, did, body, created_at)
      SELECT 'room', 'room-' || (i % 100), ${other("(i % 3000)")}, 'news ' || i, now() - interval '2 days' + make_interval(secs => i * 60)
      FROM generate_series(1, ${RECENT_POSTS}) AS i`);
    await t().db.execute(sql`INSERT INTO lanterns (did, keyword, created_at) VALUES (${me.did}, 'moonlit', now() - interval '30 days')`);
    await t().db.execute(sql`
      INSERT INTO posts (board, room, did, body, created_at)
      SELECT 'plaza', NULL, ${other("'lamp'")}, 'a moonlit plaza', now() - a::interval FROM unnest(ARRAY['10 days', '10 days 1 hour', '1 hour']) AS a`);
    // Every other table the poll reads holds rows of others too, as a lived-in city's do, so a
    // plan that reads any of them whole shows as a sequential scan (an empty table is scanned so):
    // the bench's city of 3,000 citizens (beds, locker bags, mail, 2,000 log rows, 600 plaza posts
    // of now), and acceptances, checkpoints, lanterns and schedules of the posters (the poll's nonce reads
    // and writes no table).
    await seedCity(t().db, 3000);
    const others = (table: string, columns: string, values: string, per = 1) =>
      t().db.execute(sql.raw(`INSERT INTO ${table} (${columns}) SELECT ${values} FROM generate_series(1, 3000) AS i, generate_series(1, ${per}) AS v`));
    const poster = "md5('poster-' || i) || md5('poster-' || i)";
    await others("residency_acceptances", "did, version, terms_hash, actor_kind, accepted_at", `${poster}, v, md5('terms'), 'agent', now()`, 10);
    await others("checkpoints", "did, version, content, sha256, bytes, created_at", `${poster}, v, 'cp', md5('cp'), 2, now()`, 12);
    await others("lanterns", "did, keyword, created_at", `${poster}, 'word' || v, now()`, 3);
    await others("live_schedules", "did, wake_on, polled_at", `${poster}, '["room_reply"]'::jsonb, now()`);
    // Recoveries of others (CITY-KEYS/1): closed ones, and an open one for every second citizen.
    await t().db.execute(sql`
      INSERT INTO recoveries (did, via, ticket_hash, opened_at, opens_after, state, closed_at)
      SELECT did, 'code', md5(did || s), now(), now() + interval '1 day', CASE WHEN s = 1 AND n % 2 = 0 THEN 'open' ELSE 'cancelled' END,
        CASE WHEN s = 1 AND n % 2 = 0 THEN NULL ELSE now() END
      FROM (SELECT did, row_number() OVER () AS n FROM citizens WHERE did <> ${me.did}) c, generate_series(1, 3) AS s`);
    await t().db.execute(sql`ANALYZE`);

    const cursors = {
      none: undefined,
      "sixty days old": encodePollCursor(new Date(Date.now() - 60 * 86_400_000)),
      "a minute old": encodePollCursor(new Date(Date.now() - 60_000)),
    };
    // Without a cursor the poll counts from the binding: as old as a citizen who never polled.
    await t().db.execute(sql`UPDATE citizens SET bound_at = now() - interval '60 days' WHERE did = ${me.did}`);
    for (const [name, cursor] of Object.entries(cursors)) {
      for (const plan of ["generic", "custom"] as const) {
        const { statement } = pollStatement(me.did, { cursor, schedule: null }, new Date());
        const reads = await preparedReadsOf(t().db, statement, plan);
        const what = `${plan} plan, cursor ${name}: ${reads.postsScans.join(", ")}; ${reads.postsRows} rows of posts, ${reads.buffers} buffers; sequential scans of ${reads.seqScanned.join(", ") || "nothing"}`;
        expect(reads.postsSeqScans, what).toBe(0);
        // census_counts is 16 rows (its stripes), the city's kept counts; tide_hours at most 49 (an
        // hour's count each, two days of them), which a planner may well read whole; the tide counts the log rows of the
        // last 24 hours, which here are all of the log's, so a plan that knows its cutoff may read
        // the whole log (the generic plan ranges residency_log_at).
        expect(
          reads.seqScanned.filter((table) => table !== "census_counts" && table !== "tide_hours" && !(plan === "custom" && table === "residency_log")),
          what,
        ).toEqual([]);
        // The replies part reads the caller's posts and the replies since the cursor; the lantern
        // part the posts since the cursor: each post of the window at most twice.
        expect(reads.postsRows, what).toBeLessThanOrEqual(MY_POSTS + 2 * NEWS_IN_WINDOW);
        // A sequential scan of posts alone touches its 5,000-odd heap pages (6,398 buffers in all
        // on the code before); the window's posts lie in its last few dozen pages, and each of the
        // caller's posts costs two index pages.
        expect(reads.buffers, what).toBeLessThan(400);
      }
    }
  }, 300_000);
});
