import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { encodePollCursor } from "@/lib/city/live";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { describeOnDatabases, type TestDatabase } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const DAY = 86_400_000;
const WINDOW = 7 * DAY;

/**
 * A citizen with news of three ages: a room post of its own written twenty days ago, replied to by
 * another ten days, three days and one hour ago; a lantern lit thirty days ago, matched by posts of
 * ten days and one hour ago. Inside the seven-day window: 2 replies and 1 match.
 */
async function citizenWithOldNews(t: TestDatabase) {
  const me = await admit();
  const keyword = `moon${Math.random().toString(36).slice(2, 8)}`;
  const other = "f".repeat(64);
  await t.db.execute(sql`INSERT INTO posts (board, room, did, body, created_at) VALUES ('room', 'window', ${me.did}, 'my post', now() - interval '20 days')`);
  await t.db.execute(sql`
    INSERT INTO posts (board, room, did, body, reply_to, created_at)
    SELECT 'room', 'window', ${other}, 'a reply', p.id, now() - a::interval
    FROM (SELECT id FROM posts WHERE did = ${me.did}) p, unnest(ARRAY['10 days', '3 days', '1 hour']) AS a`);
  await t.db.execute(sql`INSERT INTO lanterns (did, keyword, created_at) VALUES (${me.did}, ${keyword}, now() - interval '30 days')`);
  await t.db.execute(sql`
    INSERT INTO posts (board, room, did, body, created_at)
    SELECT 'plaza', NULL, ${other}, 'a ' || ${keyword} || ' night', now() - a::interval FROM unnest(ARRAY['10 days', '1 hour']) AS a`);
  return me;
}

const poll = (bearer: string, body: Record<string, unknown>) => callDoor(liveDoor, { bearer, body: { action: "return", ...body } });

describeOnDatabases("the delta's window: news at most seven days back, an older cursor clamped and said so", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("a poll whose cursor is older than the window counts from the window's start and says so; a cursor inside it is kept", async () => {
    const me = await citizenWithOldNews(t());
    const old = await poll(me.citizen_secret, { cursor: encodePollCursor(new Date(Date.now() - 30 * DAY)) });
    expect(old.status, JSON.stringify(old.body)).toBe(200);
    expect(old.body.returned).toBe(false);
    expect(old.body.delta).toMatchObject({ since_clamped: true, room_replies: 2, lantern_matches: 1, wake: ["room_reply", "lantern_match"] });
    expect(Date.parse(old.body.now_utc) - Date.parse(old.body.delta.since)).toBe(WINDOW);
    expect(old.body.note).toContain("older than the delta's window of 7 days");

    const inside = new Date(Date.now() - 2 * DAY);
    const recent = await poll(me.citizen_secret, { cursor: encodePollCursor(inside) });
    expect(recent.body.delta).toMatchObject({ since: inside.toISOString(), since_clamped: false, room_replies: 1, lantern_matches: 1 });
    expect(recent.body.note).not.toContain("window");
  });

  it("without a cursor, a binding older than the window is clamped too, and the next poll counts from this one", async () => {
    const me = await citizenWithOldNews(t());
    await t().db.execute(sql`UPDATE citizens SET bound_at = now() - interval '60 days' WHERE did = ${me.did}`);
    const first = await poll(me.citizen_secret, {});
    expect(first.body.delta).toMatchObject({ since_clamped: true, room_replies: 2, lantern_matches: 1 });
    expect(Date.parse(first.body.now_utc) - Date.parse(first.body.delta.since)).toBe(WINDOW);
    const next = await poll(me.citizen_secret, {});
    expect(next.body.delta).toMatchObject({ since: first.body.now_utc, since_clamped: false, room_replies: 0, lantern_matches: 0 });
  });

  it("a return from away with an old cursor is clamped the same way", async () => {
    const me = await citizenWithOldNews(t());
    expect((await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "leave" } })).status).toBe(200);
    const back = await poll(me.citizen_secret, { cursor: encodePollCursor(new Date(Date.now() - 30 * DAY)) });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.returned).toBe(true);
    expect(back.body.delta).toMatchObject({ since_clamped: true, room_replies: 2, lantern_matches: 1 });
    expect(Date.parse(back.body.now_utc) - Date.parse(back.body.delta.since)).toBe(WINDOW);
    expect(back.body.note).toContain("older than the delta's window of 7 days");
  });
});
