import { randomBytes } from "node:crypto";
import { count, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, lanterns } from "@/db/schema";
import { addLantern, type Place, publishPost } from "@/lib/city/posts";
import { countLanternMatches } from "@/lib/city/posts/lanterns";
import { lightLantern, putOutLanternDoor, readLanterns } from "@/lib/doors/declarations/posts/lanterns";
import { postBazaar, postPlaza, postRoom } from "@/lib/doors/declarations/posts/posts";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { expectProblem } from "../support/assertions";

// The published limits (the spec sets none; the door publishes it in its limits), as a literal:
// the oracle is the published number, never the constant the code counts with.
const LANTERNS_PUBLISHED = 20;
const KEYWORD_CHARS_PUBLISHED = { min: 2, max: 64 };

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/** A keyword no other test's posts contain. */
const unique = (stem: string) => `${stem}${randomBytes(4).toString("hex")}`;
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

describeOnDatabases("lanterns", (t) => {
  beforeAll(() => useDatabase(t().db));
  const lanternsOf = async (did: string) => (await t().db.select({ n: count() }).from(lanterns).where(eq(lanterns.did, did)))[0]!.n;
  const light = (secret: string, keyword: unknown) => callDoor(lightLantern, { bearer: secret, body: { keyword } });
  /** A post written at a chosen moment, through the domain module the doors use. */
  const postAt = (did: string, place: Place, body: string, now: Date) => publishPost(t().db, { did, restricted: false, place, body, replyTo: null, now });
  const plaza: Place = { board: "plaza", room: null };

  describe("happy path", () => {
    it("lights a lantern, stored lowercase, now_utc first; lighting the same keyword again answers that lantern", async () => {
      const a = await admit();
      const keyword = unique("Moon-Garden-");
      const answer = await light(a.citizen_secret, keyword);
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body)).toEqual(["now_utc", "id", "keyword", "created_at", "created"]);
      expect(answer.body).toMatchObject({ keyword: keyword.toLowerCase(), created: true, created_at: answer.body.now_utc });
      const [row] = await t().db.select().from(lanterns).where(eq(lanterns.id, answer.body.id));
      expect(row).toMatchObject({ did: a.did, keyword: keyword.toLowerCase() });
      const again = await light(a.citizen_secret, keyword.toUpperCase());
      expect(again.body).toMatchObject({ id: answer.body.id, keyword: keyword.toLowerCase(), created: false });
      expect(await lanternsOf(a.did)).toBe(1);
    });

    it("counts public posts by other citizens after the lantern that contain its keyword in any case, on every board", async () => {
      const a = await admit();
      const b = await admit();
      const word = unique("tidepool");
      const lit = minutesAgo(30);
      await postAt(b.did, plaza, `early ${word}, before the lantern`, minutesAgo(40));
      await addLantern(t().db, a.did, word.toUpperCase(), lit);
      await postAt(b.did, plaza, `exactly when it was lit: ${word}`, lit);
      await callDoor(postPlaza, { bearer: b.citizen_secret, body: { body: `The ${word.toUpperCase()} at dawn` } });
      await callDoor(postBazaar, { bearer: b.citizen_secret, body: { body: `${word} market` } });
      await callDoor(postRoom, { bearer: b.citizen_secret, body: { body: `a room about ${word}s` }, params: { room: "shore" } });
      await callDoor(postPlaza, { bearer: a.citizen_secret, body: { body: `my own ${word}` } });
      await callDoor(postPlaza, { bearer: b.citizen_secret, body: { body: "nothing to see" } });
      const other = await addLantern(t().db, a.did, unique("quiet"), lit);

      const { status, body } = await callDoor(readLanterns, { bearer: a.citizen_secret });
      expect(status).toBe(200);
      expect(Object.keys(body)).toEqual(["now_utc", "lanterns", "limit", "note"]);
      expect(body.limit).toBe(LANTERNS_PUBLISHED);
      expect(body.lanterns).toEqual([
        { id: expect.any(Number), keyword: word, created_at: lit.toISOString(), matches: 3 },
        { id: other.id, keyword: other.keyword, created_at: lit.toISOString(), matches: 0 },
      ]);
    });

    it("countLanternMatches counts distinct posts after `since` and after each lantern, never the citizen's own", async () => {
      const a = await admit();
      const b = await admit();
      const [x, y] = [unique("heron"), unique("kelp")];
      await addLantern(t().db, a.did, x, minutesAgo(50));
      await postAt(b.did, plaza, `${x} before since`, minutesAgo(45));
      const since = minutesAgo(40);
      expect(await countLanternMatches(t().db, a.did, since)).toBe(0);
      await postAt(b.did, plaza, `${y} before its lantern`, minutesAgo(35));
      await addLantern(t().db, a.did, y, minutesAgo(30));
      await postAt(b.did, { board: "room", room: "delta" }, `${x} after since`, minutesAgo(25));
      await postAt(b.did, plaza, `${x} and ${y} together`, minutesAgo(20));
      await postAt(a.did, plaza, `${x} ${y} my own`, minutesAgo(15));
      expect(await countLanternMatches(t().db, a.did, since)).toBe(2);
      expect(await countLanternMatches(t().db, a.did, minutesAgo(22))).toBe(1);
      expect(await countLanternMatches(t().db, a.did, minutesAgo(1))).toBe(0);
      expect(await countLanternMatches(t().db, b.did, minutesAgo(60))).toBe(0);
      // The listing counts per lantern since it was lit (no `since`), so the post with both keywords lights both.
      const listed = (await callDoor(readLanterns, { bearer: a.citizen_secret })).body.lanterns;
      expect(listed.map((l: { matches: number }) => l.matches)).toEqual([3, 1]);
    });
  });

  describe("bounded cost", () => {
    it("looks at the newest 5000 posts after a lantern, never the whole history", async () => {
      const a = await admit();
      const b = await admit();
      const word = unique("moth");
      await addLantern(t().db, a.did, word, minutesAgo(600));
      // Ten matching posts, then 5000 newer posts without the keyword: the ten fall out of view.
      await t().raw(
        `INSERT INTO posts (board, did, body, created_at) SELECT 'plaza', '${b.did}', '${word} early', now() - interval '500 minutes' FROM generate_series(1, 10)`,
      );
      const listed = async () => (await callDoor(readLanterns, { bearer: a.citizen_secret })).body.lanterns[0].matches;
      expect(await listed()).toBe(10);
      expect(await countLanternMatches(t().db, a.did, minutesAgo(550))).toBe(10);
      await t().raw(
        `INSERT INTO posts (board, did, body, created_at) SELECT 'plaza', '${b.did}', 'filler ' || g, now() - interval '400 minutes' + g * interval '1 millisecond' FROM generate_series(1, 5000) g`,
      );
      expect(await listed()).toBe(0);
      expect(await countLanternMatches(t().db, a.did, minutesAgo(550))).toBe(0);
      // A post newer than the filler is in view again.
      await postAt(b.did, plaza, `${word} late`, minutesAgo(1));
      expect(await listed()).toBe(1);
    });
  });

  describe("bad input", () => {
    it("accepts 2 and 64 characters, refuses 1 and 65 and every other malformed keyword with 400", async () => {
      const a = await admit();
      expect((await light(a.citizen_secret, "ab")).status).toBe(200);
      expect((await light(a.citizen_secret, "k".repeat(KEYWORD_CHARS_PUBLISHED.max))).status).toBe(200);
      expect((await light(a.citizen_secret, "🏮".repeat(KEYWORD_CHARS_PUBLISHED.max))).status).toBe(200);
      for (const keyword of ["a", "🏮", "k".repeat(KEYWORD_CHARS_PUBLISHED.max + 1), "🏮".repeat(KEYWORD_CHARS_PUBLISHED.max + 1), "   ", 42, null, ["ab"]]) {
        expectProblem(await light(a.citizen_secret, keyword), 400, "bad_request");
      }
      expectProblem(await callDoor(lightLantern, { bearer: a.citizen_secret, body: {} }), 400, "bad_request");
      expectProblem(await callDoor(lightLantern, { bearer: a.citizen_secret, body: { keyword: "ok", extra: 1 } }), 400, "bad_request");
      expect(await lanternsOf(a.did)).toBe(3);
    });

    it("refuses a secret as a keyword with 422 and stores nothing", async () => {
      const a = await admit();
      for (const keyword of ["AKIAIOSFODNN7EXAMPLE", `ghp_${"a1".repeat(18)}`]) {
        const answer = await light(a.citizen_secret, keyword);
        expectProblem(answer, 422, "content_refused");
        expect(JSON.stringify(answer.body)).not.toContain(keyword);
      }
      expect(await lanternsOf(a.did)).toBe(0);
    });
  });

  describe("privacy and tiers", () => {
    it("shows a citizen only its own lanterns, and nobody's without credentials", async () => {
      const a = await admit();
      const b = await admit();
      const secretWord = unique("private-watch-");
      await light(a.citizen_secret, secretWord);
      const seenByB = await callDoor(readLanterns, { bearer: b.citizen_secret });
      expect(seenByB.status).toBe(200);
      expect(seenByB.body.lanterns).toEqual([]);
      for (const bearer of [undefined, a.did, `city_sk_${randomBytes(36).toString("hex")}`]) {
        const read = await callDoor(readLanterns, { bearer });
        expectProblem(read, 401, "unauthorized");
        expect(JSON.stringify(read.body)).not.toContain(secretWord);
        expectProblem(await light(bearer ?? "", "intruder"), 401, "unauthorized");
      }
      expect(await lanternsOf(a.did)).toBe(1);
    });

    it("refuses a restricted citizen's new lantern with 403 and still shows its lanterns", async () => {
      const a = await admit();
      await light(a.citizen_secret, "before");
      await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
      expectProblem(await light(a.citizen_secret, "after"), 403, "forbidden");
      const read = await callDoor(readLanterns, { bearer: a.citizen_secret });
      expect(read.body.lanterns.map((l: { keyword: string }) => l.keyword)).toEqual(["before"]);
    });
  });

  describe("limits and concurrency", () => {
    it("keeps the 20th lantern and refuses the 21st with 409 limit_reached, still answering a lit keyword", async () => {
      const a = await admit();
      for (let i = 1; i <= LANTERNS_PUBLISHED; i++) expect((await light(a.citizen_secret, `word-${i}`)).status, `lantern ${i}`).toBe(200);
      const over = await light(a.citizen_secret, "word-21");
      expectProblem(over, 409, "limit_reached");
      expect(over.body.limit).toMatchObject({ name: "lanterns", limit: LANTERNS_PUBLISHED });
      expect((await light(a.citizen_secret, "WORD-7")).body).toMatchObject({ created: false, keyword: "word-7" });
      expect(await lanternsOf(a.did)).toBe(LANTERNS_PUBLISHED);
    });

    it("keeps exactly 20 of 25 parallel lanterns and refuses exactly 5", async () => {
      const a = await admit();
      const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => light(a.citizen_secret, `parallel-${i}`)));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(LANTERNS_PUBLISHED);
      expect(statuses.filter((s) => s === 409)).toHaveLength(5);
      expect(await lanternsOf(a.did)).toBe(LANTERNS_PUBLISHED);
    });

    it("lights one lantern for 10 parallel requests with the same keyword", async () => {
      const a = await admit();
      const answers = await Promise.all(Array.from({ length: 10 }, () => light(a.citizen_secret, "same-word")));
      expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(answers.filter((r) => r.body.created)).toHaveLength(1);
      expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
      expect(await lanternsOf(a.did)).toBe(1);
    });
  });
});

describeOnDatabases("putting out a lantern", (t) => {
  beforeAll(() => useDatabase(t().db));

  it(
    "puts out only the caller's own lantern and frees a place under the cap",
    async () => {
      const me = await admit();
      const other = await admit();
      const ids: number[] = [];
      for (let i = 0; i < LANTERNS_PUBLISHED; i++) {
        ids.push((await callDoor(lightLantern, { bearer: me.citizen_secret, body: { keyword: `word${i}x` } })).body.id);
      }
      expectProblem(await callDoor(lightLantern, { bearer: me.citizen_secret, body: { keyword: "onemore" } }), 409, "limit_reached");
      expectProblem(await callDoor(putOutLanternDoor, { bearer: other.citizen_secret, query: `?id=${ids[0]}` }), 404, "not_found");
      expectProblem(await callDoor(putOutLanternDoor, { query: `?id=${ids[0]}` }), 401, "unauthorized");
      expectProblem(await callDoor(putOutLanternDoor, { bearer: me.citizen_secret, query: "?id=abc" }), 400, "bad_request");
      const out = await callDoor(putOutLanternDoor, { bearer: me.citizen_secret, query: `?id=${ids[0]}` });
      expect(out.status).toBe(200);
      expect(out.body).toMatchObject({ put_out: true, id: ids[0], keyword: "word0x" });
      expect((await t().db.select({ n: count() }).from(lanterns).where(eq(lanterns.did, me.did)))[0]!.n).toBe(LANTERNS_PUBLISHED - 1);
      expect((await callDoor(lightLantern, { bearer: me.citizen_secret, body: { keyword: "onemore" } })).status).toBe(200);
      expectProblem(await callDoor(putOutLanternDoor, { bearer: me.citizen_secret, query: `?id=${ids[0]}` }), 404, "not_found");
    },
    HEAVY_TEST_MS,
  );
});
