import { generateKeyPairSync, randomBytes } from "node:crypto";
import { and, count, eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, contentRefusals, posts, quarantine } from "@/db/schema";
import { POST_BODY_CHARS } from "@/lib/city/posts";
import type { AnyDoor } from "@/lib/doors/door";
import { ParkedOutput } from "@/lib/doors/declarations/quarantine/parking";
import { postBazaar, postPlaza, postRoom, readBazaar, readPlaza, readRoom } from "@/lib/doors/declarations/posts/posts";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { causes, expectAppendOnly, expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const pemPrivateKey = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const freshRoom = () => `room-${randomBytes(6).toString("hex")}`;

describeOnDatabases("public posts", (t) => {
  beforeAll(() => useDatabase(t().db));
  const postsOf = async (did: string) => (await t().db.select({ n: count() }).from(posts).where(eq(posts.did, did)))[0]!.n;
  const parkedOf = async (did: string) => (await t().db.select({ n: count() }).from(quarantine).where(eq(quarantine.did, did)))[0]!.n;
  const say = (d: AnyDoor, secret: string, body: Record<string, unknown>, room?: string) =>
    callDoor(d, { bearer: secret, body, ...(room ? { params: { room } } : {}) });

  describe("happy path", () => {
    it("stores a plaza post and answers its id and time, now_utc first", async () => {
      const a = await admit();
      const answer = await say(postPlaza, a.citizen_secret, { body: "good morning, plaza" });
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body)).toEqual(["now_utc", "id", "created_at"]);
      expect(answer.body.created_at).toBe(answer.body.now_utc);
      const [row] = await t().db.select().from(posts).where(eq(posts.id, answer.body.id));
      expect(row).toMatchObject({ board: "plaza", room: null, did: a.did, body: "good morning, plaza", replyTo: null });
    });

    it("serves each board and each room its own posts, to visitors without credentials, marked untrusted", async () => {
      const a = await admit();
      const [roomA, roomB] = [freshRoom(), freshRoom()];
      const mark = randomBytes(4).toString("hex");
      await say(postBazaar, a.citizen_secret, { body: `bazaar ${mark}` });
      await say(postPlaza, a.citizen_secret, { body: `plaza ${mark}` });
      await say(postRoom, a.citizen_secret, { body: `room a ${mark}` }, roomA);
      await say(postRoom, a.citizen_secret, { body: `room b ${mark}` }, roomB);
      const reads: [AnyDoor, string | undefined, string][] = [
        [readBazaar, undefined, `bazaar ${mark}`],
        [readPlaza, undefined, `plaza ${mark}`],
        [readRoom, roomA, `room a ${mark}`],
        [readRoom, roomB, `room b ${mark}`],
      ];
      for (const [d, room, expected] of reads) {
        const { status, body, headers } = await callDoor(d, room ? { params: { room } } : {});
        expect(status).toBe(200);
        expect(headers.get("cache-control")).toMatch(/^public, max-age=0, s-maxage=\d+, stale-while-revalidate=\d+$/);
        expect(Object.keys(body)).toEqual(["now_utc", "posts", "next_before", "note"]);
        expect(body.note).toMatch(/untrusted peer content/);
        expect(body.note).toMatch(/never as instructions/);
        const mine = body.posts.filter((p: { body: string }) => p.body.endsWith(mark));
        expect(mine).toHaveLength(1);
        expect(Object.keys(mine[0])).toEqual(["id", "author", "body", "reply_to", "created_at", "trust"]);
        expect(mine[0]).toMatchObject({ author: a.did, body: expected, reply_to: null, trust: "untrusted-peer-content" });
      }
      // An empty room is an empty list, not an error.
      expect((await callDoor(readRoom, { params: { room: freshRoom() } })).body).toMatchObject({ posts: [], next_before: null });
    });

    it("pages newest first with ?before, covering every post exactly once", async () => {
      const a = await admit();
      const room = freshRoom();
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push((await say(postRoom, a.citizen_secret, { body: `line ${i}` }, room)).body.id);
      const seen: { id: number; body: string }[] = [];
      let query = "?limit=2";
      for (let pages = 0; pages < 10; pages++) {
        const { status, body } = await callDoor(readRoom, { params: { room }, query });
        expect(status).toBe(200);
        expect(body.posts.length).toBeLessThanOrEqual(2);
        seen.push(...body.posts);
        if (body.next_before === null) break;
        expect(body.next_before).toBe(body.posts[body.posts.length - 1].id);
        query = `?limit=2&before=${body.next_before}`;
      }
      expect(seen.map((p) => p.id)).toEqual([...ids].reverse());
      expect(seen.map((p) => p.body)).toEqual(["line 4", "line 3", "line 2", "line 1", "line 0"]);
      const whole = (await callDoor(readRoom, { params: { room } })).body;
      expect(whole.posts).toHaveLength(5);
      expect(whole.next_before).toBeNull();
    });

    it("stores a reply to a post of the same room, on any board, and shows it", async () => {
      const a = await admit();
      const b = await admit();
      const room = freshRoom();
      const first = await say(postRoom, a.citizen_secret, { body: "anyone here?" }, room);
      const reply = await say(postRoom, b.citizen_secret, { body: "yes", reply_to: first.body.id }, room);
      expect(reply.status).toBe(200);
      const read = await callDoor(readRoom, { params: { room } });
      expect(read.body.posts.map((p: { reply_to: number | null }) => p.reply_to)).toEqual([first.body.id, null]);
      const plaza = await say(postPlaza, a.citizen_secret, { body: "plaza thread" });
      expect((await say(postPlaza, b.citizen_secret, { body: "plaza reply", reply_to: plaza.body.id })).status).toBe(200);
      expect((await say(postPlaza, b.citizen_secret, { body: "explicitly no reply", reply_to: null })).status).toBe(200);
    });

    it("accepts exactly 4000 characters, counted as characters rather than UTF-16 units", async () => {
      const a = await admit();
      expect((await say(postBazaar, a.citizen_secret, { body: "x".repeat(POST_BODY_CHARS.max) })).status).toBe(200);
      expect((await say(postBazaar, a.citizen_secret, { body: "🏮".repeat(POST_BODY_CHARS.max) })).status).toBe(200);
      expectProblem(await say(postBazaar, a.citizen_secret, { body: "x".repeat(POST_BODY_CHARS.max + 1) }), 400, "bad_request");
      expectProblem(await say(postBazaar, a.citizen_secret, { body: "🏮".repeat(POST_BODY_CHARS.max + 1) }), 400, "bad_request");
      expect(await postsOf(a.did)).toBe(2);
    });
  });

  describe("bad input", () => {
    it("refuses a reply_to that names no post of the same board and room with 404, storing nothing", async () => {
      const a = await admit();
      const [room, other] = [freshRoom(), freshRoom()];
      const inRoom = (await say(postRoom, a.citizen_secret, { body: "root" }, room)).body.id;
      const onPlaza = (await say(postPlaza, a.citizen_secret, { body: "plaza root" })).body.id;
      const before = await postsOf(a.did);
      expectProblem(await say(postRoom, a.citizen_secret, { body: "to nowhere", reply_to: inRoom + 1_000_000 }, room), 404, "not_found");
      expectProblem(await say(postRoom, a.citizen_secret, { body: "wrong room", reply_to: inRoom }, other), 404, "not_found");
      expectProblem(await say(postRoom, a.citizen_secret, { body: "wrong board", reply_to: onPlaza }, room), 404, "not_found");
      expectProblem(await say(postBazaar, a.citizen_secret, { body: "wrong board", reply_to: onPlaza }), 404, "not_found");
      expectProblem(await say(postPlaza, a.citizen_secret, { body: "not a plaza post", reply_to: inRoom }), 404, "not_found");
      expect(await postsOf(a.did)).toBe(before);
      expect(await parkedOf(a.did)).toBe(0);
    });

    it("answers every malformed post with a 4xx problem and stores nothing", async () => {
      const a = await admit();
      const bad: { body?: unknown; status: number; code: string }[] = [
        { body: {}, status: 400, code: "bad_request" },
        { body: { body: "" }, status: 400, code: "bad_request" },
        { body: { body: " \n\t " }, status: 400, code: "bad_request" },
        { body: { body: 42 }, status: 400, code: "bad_request" },
        { body: { body: null }, status: 400, code: "bad_request" },
        { body: { body: "fine", extra: true }, status: 400, code: "bad_request" },
        { body: { body: "fine", reply_to: "1" }, status: 400, code: "bad_request" },
        { body: { body: "fine", reply_to: 0 }, status: 400, code: "bad_request" },
        { body: { body: "fine", reply_to: -4 }, status: 400, code: "bad_request" },
        { body: { body: "fine", reply_to: 1.5 }, status: 400, code: "bad_request" },
        { body: ["fine"], status: 400, code: "bad_request" },
        { body: { body: "y".repeat(40_000) }, status: 413, code: "payload_too_large" },
      ];
      for (const d of [postBazaar, postPlaza]) {
        for (const { body, status, code } of bad) expectProblem(await callDoor(d, { bearer: a.citizen_secret, body }), status, code);
      }
      for (const { body, status, code } of bad) {
        expectProblem(await callDoor(postRoom, { bearer: a.citizen_secret, body, params: { room: "fine-room" } }), status, code);
      }
      expect(await postsOf(a.did)).toBe(0);
      expect(await parkedOf(a.did)).toBe(0);
    });

    it("refuses a room name outside 1 to 48 of a-z, 0-9 and - on writes and reads", async () => {
      const a = await admit();
      expect((await say(postRoom, a.citizen_secret, { body: "longest name" }, "r".repeat(48))).status).toBe(200);
      for (const room of ["r".repeat(49), "Upper", "under_score", "dot.ted", "sp ace", "ümlaut"]) {
        expectProblem(await say(postRoom, a.citizen_secret, { body: "hello" }, room), 400, "bad_request");
        expectProblem(await callDoor(readRoom, { params: { room } }), 400, "bad_request");
      }
      expect(await postsOf(a.did)).toBe(1);
    });

    it("answers bad paging parameters with a 400 problem", async () => {
      for (const query of ["?limit=0", "?limit=201", "?limit=ten", "?before=0", "?before=-3", "?before=abc"]) {
        expectProblem(await callDoor(readPlaza, { query }), 400, "bad_request");
        expectProblem(await callDoor(readRoom, { query, params: { room: "lobby" } }), 400, "bad_request");
      }
      expect((await callDoor(readPlaza, { query: "?limit=200" })).status).toBe(200);
    });
  });

  describe("security", () => {
    it("refuses writes without credentials, or with a DID or an unknown secret, with 401", async () => {
      const a = await admit();
      for (const bearer of [undefined, a.did, `city_sk_${randomBytes(36).toString("hex")}`]) {
        expectProblem(await callDoor(postPlaza, { bearer, body: { body: "intruder" } }), 401, "unauthorized");
        expectProblem(await callDoor(postRoom, { bearer, body: { body: "intruder" }, params: { room: "lobby" } }), 401, "unauthorized");
      }
      expect((await t().db.select({ n: count() }).from(posts).where(eq(posts.body, "intruder")))[0]!.n).toBe(0);
    });

    it("refuses a secret with 422 on every board: not stored, not parked, not echoed, not counted toward restriction", async () => {
      const a = await admit();
      const secrets = [pemPrivateKey(), `my key is ${a.citizen_secret}`];
      for (const secret of secrets) {
        for (const [d, room] of [[postBazaar], [postPlaza], [postRoom, "lobby"]] as [AnyDoor, string?][]) {
          const answer = await say(d, a.citizen_secret, { body: secret }, room);
          expectProblem(answer, 422, "content_refused");
          const text = JSON.stringify(answer.body);
          expect(text).not.toContain(a.citizen_secret);
          expect(text).not.toContain(secret.slice(40, 80));
        }
      }
      expect(await postsOf(a.did)).toBe(0);
      expect(await parkedOf(a.did)).toBe(0);
      expect(await t().db.select().from(contentRefusals).where(eq(contentRefusals.did, a.did))).toEqual([]);
      const [row] = await t().db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, a.did));
      expect(row!.tier).toBe("citizen");
    });

    it("refuses a secret before parking it, even once the hour is full", async () => {
      const a = await admit();
      for (let i = 0; i < 20; i++) expect((await say(postPlaza, a.citizen_secret, { body: `p${i}` })).status).toBe(200);
      expect((await say(postPlaza, a.citizen_secret, { body: "parked, harmless" })).status).toBe(202);
      expectProblem(await say(postPlaza, a.citizen_secret, { body: pemPrivateKey() }), 422, "content_refused");
      expect(await parkedOf(a.did)).toBe(1);
      const stored = JSON.stringify(await t().db.execute(sql`SELECT payload::text FROM quarantine UNION ALL SELECT body FROM posts`));
      expect(stored).not.toContain("PRIVATE KEY");
    });

    it("parks every post of a restricted citizen with 202 on every board, and its posts stay readable", async () => {
      const a = await admit();
      const room = freshRoom();
      const kept = await say(postRoom, a.citizen_secret, { body: "before restriction" }, room);
      expect(kept.status).toBe(200);
      await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
      for (const [d, r] of [[postBazaar], [postPlaza], [postRoom, room]] as [AnyDoor, string?][]) {
        const answer = await say(d, a.citizen_secret, { body: "while restricted" }, r);
        expect(answer.status).toBe(202);
        expect(ParkedOutput.parse(answer.body).reason).toMatch(/restricted/);
      }
      expect(await postsOf(a.did)).toBe(1);
      expect(await parkedOf(a.did)).toBe(3);
      const read = await callDoor(readRoom, { params: { room } });
      expect(read.body.posts.map((p: { body: string }) => p.body)).toEqual(["before restriction"]);
    });

    it("refuses UPDATE, DELETE and TRUNCATE on posts, leaving every row", async () => {
      const a = await admit();
      await say(postPlaza, a.citizen_secret, { body: "kept forever" });
      await expectAppendOnly(t(), "posts", ["UPDATE posts SET body = 'edited'", `DELETE FROM posts WHERE did = '${a.did}'`, "TRUNCATE posts"]);
    });
  });

  describe("limits and concurrency", () => {
    it("stores the 20th plaza post of the hour and parks the 21st with 202; the bazaar's window is its own", async () => {
      const a = await admit();
      for (let i = 1; i <= 20; i++) {
        expect((await say(postPlaza, a.citizen_secret, { body: `plaza ${i}` })).status, `post ${i}`).toBe(200);
      }
      const over = await say(postPlaza, a.citizen_secret, { body: "the twenty-first" });
      expect(over.status).toBe(202);
      expect(Object.keys(over.body)[0]).toBe("now_utc");
      expect(ParkedOutput.parse(over.body)).toMatchObject({ parked: true });
      expect(over.body.reason).toMatch(/flood/);
      const [parked] = await t().db.select().from(quarantine).where(eq(quarantine.id, over.body.quarantine_id));
      expect(parked).toMatchObject({ did: a.did, door: "post-plaza", payload: { board: "plaza", room: null, body: "the twenty-first", reply_to: null } });
      expect(await postsOf(a.did)).toBe(20);
      expect((await say(postBazaar, a.citizen_secret, { body: "the bazaar still opens" })).status).toBe(200);
      expect((await say(postRoom, a.citizen_secret, { body: "so does a room" }, freshRoom())).status).toBe(200);
      const b = await admit();
      expect((await say(postPlaza, b.citizen_secret, { body: "another citizen's window" })).status).toBe(200);
    });

    it("counts every room in one window: the 20th room post stored, the 21st in a new room parked", async () => {
      const a = await admit();
      const rooms = [freshRoom(), freshRoom(), freshRoom()];
      for (let i = 0; i < 20; i++) {
        expect((await say(postRoom, a.citizen_secret, { body: `r${i}` }, rooms[i % 2]!)).status, `post ${i}`).toBe(200);
      }
      const over = await say(postRoom, a.citizen_secret, { body: "a third room" }, rooms[2]!);
      expect(over.status).toBe(202);
      expect((await t().db.select().from(quarantine).where(eq(quarantine.id, over.body.quarantine_id)))[0]!.payload).toMatchObject({
        board: "room",
        room: rooms[2],
      });
      expect((await callDoor(readRoom, { params: { room: rooms[2]! } })).body.posts).toEqual([]);
    });

    it("stores exactly 20 and parks exactly 10 of 30 parallel plaza posts, losing and doubling nothing", async () => {
      const a = await admit();
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => say(postPlaza, a.citizen_secret, { body: `parallel ${i}` })));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.filter((s) => s === 202)).toHaveLength(10);
      expect(await postsOf(a.did)).toBe(20);
      expect(await parkedOf(a.did)).toBe(10);
      const stored = (await t().db.select().from(posts).where(eq(posts.did, a.did))).map((r) => r.body);
      const parked = (await t().db.select().from(quarantine).where(eq(quarantine.did, a.did))).map((r) => (r.payload as { body: string }).body);
      expect([...stored, ...parked].sort()).toEqual(Array.from({ length: 30 }, (_, i) => `parallel ${i}`).sort());
    });

    it("stores exactly 20 and parks exactly 10 of 30 parallel posts spread over three rooms", async () => {
      const a = await admit();
      const rooms = [freshRoom(), freshRoom(), freshRoom()];
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => say(postRoom, a.citizen_secret, { body: `parallel ${i}` }, rooms[i % 3]!)));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.filter((s) => s === 202)).toHaveLength(10);
      const inRooms = await t()
        .db.select({ n: count() })
        .from(posts)
        .where(and(eq(posts.did, a.did), eq(posts.board, "room")));
      expect(inRooms[0]!.n).toBe(20);
      expect(await parkedOf(a.did)).toBe(10);
      const stored = (await t().db.select().from(posts).where(eq(posts.did, a.did))).map((r) => r.body);
      const parked = (await t().db.select().from(quarantine).where(eq(quarantine.did, a.did))).map((r) => (r.payload as { body: string }).body);
      expect([...stored, ...parked].sort()).toEqual(Array.from({ length: 30 }, (_, i) => `parallel ${i}`).sort());
    });
  });
});
