import { generateKeyPairSync, randomBytes } from "node:crypto";
import { and, count, eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { checkpoints, citizens, cityCounters, contentRefusals, lockerBags } from "@/db/schema";
import { countedAttempts } from "../support/rate";
import { LOCKER_BYTES_COUNTER } from "@/lib/city/shelves";
import { keepCheckpoint, readCheckpoints } from "@/lib/doors/declarations/shelves/checkpoints";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { keepLockerBag, readLocker, readLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { expectProblem } from "../support/assertions";

// The published limit (the spec sets none; the door publishes it in its limits), as a literal:
// the oracle is the published number, never the constant the code counts with.
const LOCKER_WRITES_PUBLISHED = 240;

// The spec's numbers (Limits table), not the code's constants.
const L = { bagsPerCitizen: 16, bytesPerBag: 262_144, bytesPerCitizen: 1_048_576, bytesCityWide: 2_147_483_648 } as const;

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
// A small city, so that its locker bound is reached within this file (env() reads it on first use).
const CITY_BYTES = 4 * L.bytesPerCitizen;
process.env.CITY_LOCKER_CITY_BYTES = String(CITY_BYTES);

const pemPrivateKey = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const citySecretLike = () => `city_sk_${randomBytes(36).toString("hex")}`;

describeOnDatabases(
  "locker",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    const keep = (secret: string | undefined, bag: unknown, content: unknown) => callDoor(keepLockerBag, { bearer: secret, body: { bag, content } });
    const list = (secret: string | undefined) => callDoor(readLocker, { bearer: secret });
    const readOne = (secret: string | undefined, bag: string) => callDoor(readLockerBag, { bearer: secret, params: { bag } });
    const bagsOf = async (did: string) => (await t().db.select({ n: count() }).from(lockerBags).where(eq(lockerBags.did, did)))[0]!.n;
    const counter = async () => (await t().db.select({ v: cityCounters.value }).from(cityCounters).where(eq(cityCounters.name, LOCKER_BYTES_COUNTER)))[0]!.v;
    const storedBytes = async () =>
      (
        await t()
          .db.select({ s: sql`coalesce(sum(${lockerBags.bytes}), 0)`.mapWith(Number) })
          .from(lockerBags)
      )[0]!.s;
    /** The city's counter always equals the bytes actually kept, and never passes the bound. */
    async function expectCityConsistent() {
      const [kept, total] = [await storedBytes(), await counter()];
      expect(total).toBe(kept);
      expect(total).toBeLessThanOrEqual(CITY_BYTES);
      return total;
    }

    describe("happy path", () => {
      it("keeps a bag and answers { now_utc, bag, bytes, updated_at }, counting UTF-8 bytes", async () => {
        const a = await admit();
        const before = await counter();
        const content = "café ☕ 🗝️ notes";
        const answer = await keep(a.citizen_secret, "notes.v1", content);
        expect(answer.status).toBe(200);
        expect(Object.keys(answer.body)).toEqual(["now_utc", "bag", "bytes", "updated_at"]);
        expect(answer.body).toMatchObject({ bag: "notes.v1", bytes: Buffer.byteLength(content, "utf8"), updated_at: answer.body.now_utc });
        expect(answer.body.bytes).toBeGreaterThan(content.length);
        expect(answer.headers.get("cache-control")).toBe("private, no-store");
        const [row] = await t().db.select().from(lockerBags).where(eq(lockerBags.did, a.did));
        expect(row).toMatchObject({ bag: "notes.v1", content, bytes: answer.body.bytes });
        expect(await counter()).toBe(before + answer.body.bytes);
        await expectCityConsistent();
      });

      it("reads one bag with its content, and lists names and sizes only, by name, with used_bytes and limits", async () => {
        const a = await admit();
        await keep(a.citizen_secret, "b-second", "two");
        await keep(a.citizen_secret, "a_first", "one!");
        await keep(a.citizen_secret, "empty", "");
        const one = await readOne(a.citizen_secret, "a_first");
        expect(one.status).toBe(200);
        expect(Object.keys(one.body)).toEqual(["now_utc", "bag", "content", "bytes", "updated_at"]);
        expect(one.body).toMatchObject({ bag: "a_first", content: "one!", bytes: 4 });
        const listed = await list(a.citizen_secret);
        expect(listed.status).toBe(200);
        expect(Object.keys(listed.body)).toEqual(["now_utc", "bags", "used_bytes", "limits"]);
        expect(listed.body.bags.map((b: { bag: string; bytes: number }) => [b.bag, b.bytes])).toEqual([
          ["a_first", 4],
          ["b-second", 3],
          ["empty", 0],
        ]);
        expect(JSON.stringify(listed.body.bags)).not.toContain("one!");
        expect(listed.body.used_bytes).toBe(7);
        expect(listed.body.limits).toEqual(keepLockerBag.limits);
        expect(listed.body.limits).toEqual(
          expect.arrayContaining([
            { name: "bags", limit: L.bagsPerCitizen, per: "citizen", over: "refused" },
            { name: "bag_bytes", limit: L.bytesPerBag, per: "bag", over: "refused" },
            { name: "citizen_bytes", limit: L.bytesPerCitizen, per: "citizen", over: "refused" },
            { name: "city_bytes", limit: CITY_BYTES, per: "city", over: "refused" },
            { name: "locker_writes", limit: LOCKER_WRITES_PUBLISHED, window_seconds: 3600, per: "citizen", over: "refused" },
          ]),
        );
        const fresh = await admit();
        expect((await list(fresh.citizen_secret)).body).toMatchObject({ bags: [], used_bytes: 0 });
      });

      it("overwrites a bag in place: one bag, new content, new time, the city counting only the difference", async () => {
        const a = await admit();
        const first = await keep(a.citizen_secret, "diary", "x".repeat(100));
        const afterFirst = await counter();
        await new Promise((r) => setTimeout(r, 5));
        const grown = await keep(a.citizen_secret, "diary", "y".repeat(250));
        expect(grown.body.bytes).toBe(250);
        expect(await counter()).toBe(afterFirst + 150);
        const shrunk = await keep(a.citizen_secret, "diary", "z".repeat(40));
        expect(shrunk.body.bytes).toBe(40);
        expect(await counter()).toBe(afterFirst - 60);
        expect(await bagsOf(a.did)).toBe(1);
        const one = await readOne(a.citizen_secret, "diary");
        expect(one.body).toMatchObject({ content: "z".repeat(40), bytes: 40, updated_at: shrunk.body.updated_at });
        expect(Date.parse(one.body.updated_at)).toBeGreaterThan(Date.parse(first.body.updated_at));
        expect((await list(a.citizen_secret)).body.used_bytes).toBe(40);
        await expectCityConsistent();
      });

      it("answers a bag the caller does not have with a 404 problem", async () => {
        const a = await admit();
        const problem = expectProblem(await readOne(a.citizen_secret, "nothing-here"), 404, "not_found");
        expect(problem.door).toBe("/api/locker/{bag}");
      });
    });

    describe("bad input", () => {
      it("answers every malformed write with a 400 problem and changes nothing", async () => {
        const a = await admit();
        await keep(a.citizen_secret, "kept", "original");
        const before = await counter();
        const bodies: unknown[] = [
          {},
          { bag: "only-a-name" },
          { content: "only content" },
          { bag: "", content: "x" },
          { bag: "b".repeat(65), content: "x" },
          { bag: "a/b", content: "x" },
          { bag: "with space", content: "x" },
          { bag: "é", content: "x" },
          { bag: ".", content: "x" },
          { bag: "..", content: "x" },
          { bag: 7, content: "x" },
          { bag: "kept", content: 42 },
          { bag: "kept", content: null },
          { bag: "kept", content: ["a"] },
          { bag: "kept", content: "nul \u0000 inside" },
          { bag: "kept", content: "lone \uD800 surrogate" },
          { bag: "kept", content: "fine", extra: true },
          "a string",
          [1, 2],
        ];
        for (const body of bodies) {
          expectProblem(await callDoor(keepLockerBag, { bearer: a.citizen_secret, body }), 400, "bad_request");
        }
        const malformed = await serveDoor(
          keepLockerBag,
          new Request("http://city.test/api/locker", {
            method: "POST",
            headers: { authorization: `Bearer ${a.citizen_secret}`, "content-type": "application/json" },
            body: '{"bag": "kept", "content": ',
          }),
        );
        expect(malformed.status).toBe(400);
        expect(((await malformed.json()) as { code: string }).code).toBe("malformed_json");
        expect((await readOne(a.citizen_secret, "kept")).body.content).toBe("original");
        expect(await bagsOf(a.did)).toBe(1);
        expect(await counter()).toBe(before);
      });

      it("accepts the longest bag name and refuses a bad name on the read door with 400", async () => {
        const a = await admit();
        const longest = `${"A".repeat(30)}z-9_.${"q".repeat(29)}`;
        expect(longest).toHaveLength(64);
        expect((await keep(a.citizen_secret, longest, "ok")).status).toBe(200);
        expect((await readOne(a.citizen_secret, longest)).body.content).toBe("ok");
        for (const bag of ["b".repeat(65), "with space", "a%2Fb", "ünï"]) {
          expectProblem(await readOne(a.citizen_secret, bag), 400, "bad_request");
        }
      });
    });

    describe("privacy", () => {
      it("shows a citizen only its own bags: another citizen's secret reads nothing of them", async () => {
        const a = await admit();
        const b = await admit();
        const mark = `locker-of-a-${randomBytes(8).toString("hex")}`;
        await keep(a.citizen_secret, "private", mark);
        const bList = await list(b.citizen_secret);
        expect(bList.status).toBe(200);
        expect(bList.body).toMatchObject({ bags: [], used_bytes: 0 });
        const bRead = expectProblem(await readOne(b.citizen_secret, "private"), 404, "not_found");
        expect(JSON.stringify(bRead)).not.toContain(mark);
        // A bag of the same name is b's own; a's is untouched.
        expect((await keep(b.citizen_secret, "private", "b's own")).status).toBe(200);
        expect((await readOne(b.citizen_secret, "private")).body.content).toBe("b's own");
        expect((await readOne(a.citizen_secret, "private")).body.content).toBe(mark);
      });

      it("refuses every locker door without credentials, or with a DID or an unknown secret, with 401", async () => {
        const a = await admit();
        const mark = `secret-bag-${randomBytes(8).toString("hex")}`;
        await keep(a.citizen_secret, "mine", mark);
        for (const bearer of [undefined, a.did, citySecretLike()]) {
          for (const answer of [await list(bearer), await readOne(bearer, "mine"), await keep(bearer, "mine", "intruder")]) {
            expectProblem(answer, 401, "unauthorized");
            expect(JSON.stringify(answer.body)).not.toContain(mark);
          }
        }
        expect((await readOne(a.citizen_secret, "mine")).body.content).toBe(mark);
      });
    });

    describe("refused content", () => {
      it("refuses a PEM private key with 422: nothing stored, the old bag intact, the key not echoed, the refusal counted", async () => {
        const a = await admit();
        await keep(a.citizen_secret, "keys", "nothing secret yet");
        const before = await counter();
        const key = pemPrivateKey();
        for (const bag of ["keys", "new-bag"]) {
          const answer = await keep(a.citizen_secret, bag, `my key:\n${key}`);
          expectProblem(answer, 422, "content_refused");
          const text = JSON.stringify(answer.body);
          expect(text).not.toContain(key.split("\n")[1]!.slice(0, 40));
          expect(text).not.toContain("BEGIN PRIVATE KEY");
        }
        expectProblem(await keep(a.citizen_secret, "token", `here: ${citySecretLike()}`), 422, "content_refused");
        expect(await bagsOf(a.did)).toBe(1);
        expect((await readOne(a.citizen_secret, "keys")).body.content).toBe("nothing secret yet");
        expect(await counter()).toBe(before);
        const stored = JSON.stringify(await t().db.select({ content: lockerBags.content }).from(lockerBags));
        expect(stored).not.toContain("PRIVATE KEY");
        const refusals = await t().db.select().from(contentRefusals).where(eq(contentRefusals.did, a.did));
        expect(refusals.map((r) => r.door)).toEqual(["keep-locker", "keep-locker", "keep-locker"]);
      });
    });

    describe("restriction", () => {
      it("refuses both shelf writes of a restricted citizen with 403, keeps its bags and checkpoints, and lets it read", async () => {
        const a = await admit();
        await keep(a.citizen_secret, "before", "kept before restriction");
        await callDoor(keepCheckpoint, { bearer: a.citizen_secret, body: { content: "checkpoint before restriction" } });
        const bagRows = JSON.stringify(await t().db.select().from(lockerBags).where(eq(lockerBags.did, a.did)));
        const checkpointRows = JSON.stringify(await t().db.select().from(checkpoints).where(eq(checkpoints.did, a.did)));
        const before = await counter();
        await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));

        expectProblem(await keep(a.citizen_secret, "before", "overwrite while restricted"), 403, "forbidden");
        expectProblem(await keep(a.citizen_secret, "another", "new while restricted"), 403, "forbidden");
        expectProblem(await callDoor(keepCheckpoint, { bearer: a.citizen_secret, body: { content: "while restricted" } }), 403, "forbidden");

        expect((await list(a.citizen_secret)).body.bags.map((b: { bag: string }) => b.bag)).toEqual(["before"]);
        expect((await readOne(a.citizen_secret, "before")).body.content).toBe("kept before restriction");
        const shelf = await callDoor(readCheckpoints, { bearer: a.citizen_secret, query: "?version=latest" });
        expect(shelf.body).toMatchObject({ version: 1, content: "checkpoint before restriction" });
        expect(JSON.stringify(await t().db.select().from(lockerBags).where(eq(lockerBags.did, a.did)))).toBe(bagRows);
        expect(JSON.stringify(await t().db.select().from(checkpoints).where(eq(checkpoints.did, a.did)))).toBe(checkpointRows);
        expect(await counter()).toBe(before);
      });
    });

    describe("per-citizen limits", () => {
      it("keeps the 16th bag, refuses the 17th with 409 limit_reached, and still lets one of the 16 be overwritten", async () => {
        const a = await admit();
        for (let i = 1; i <= L.bagsPerCitizen; i++) expect((await keep(a.citizen_secret, `bag-${i}`, `content ${i}`)).status, `bag ${i}`).toBe(200);
        const before = await counter();
        const over = expectProblem(await keep(a.citizen_secret, "bag-17", "one too many"), 409, "limit_reached");
        expect(over.limit).toMatchObject({ name: "bags", limit: L.bagsPerCitizen });
        expect(await bagsOf(a.did)).toBe(L.bagsPerCitizen);
        expect((await keep(a.citizen_secret, "bag-3", "rewritten")).status).toBe(200);
        expect(await bagsOf(a.did)).toBe(L.bagsPerCitizen);
        expect((await readOne(a.citizen_secret, "bag-1")).body.content).toBe("content 1");
        expect(await counter()).toBe(before + "rewritten".length - "content 3".length);
        await expectCityConsistent();
      });

      it("keeps a bag of exactly 262144 UTF-8 bytes and refuses 262145 with 413, counting bytes not characters", async () => {
        const a = await admit();
        expect((await keep(a.citizen_secret, "full", "a".repeat(L.bytesPerBag))).body.bytes).toBe(L.bytesPerBag);
        const over = expectProblem(await keep(a.citizen_secret, "over", "a".repeat(L.bytesPerBag + 1)), 413, "payload_too_large");
        expect(over.limit).toMatchObject({ name: "bag_bytes", limit: L.bytesPerBag });
        // 131072 two-byte characters fill a bag exactly; one more ASCII byte is over.
        expect((await keep(a.citizen_secret, "accents", "é".repeat(L.bytesPerBag / 2))).body.bytes).toBe(L.bytesPerBag);
        expectProblem(await keep(a.citizen_secret, "accents", `${"é".repeat(L.bytesPerBag / 2)}!`), 413, "payload_too_large");
        expect((await readOne(a.citizen_secret, "accents")).body.content).toBe("é".repeat(L.bytesPerBag / 2));
        expect(await bagsOf(a.did)).toBe(2);
        await expectCityConsistent();
      });

      it("takes a full bag however JSON escapes it, and refuses a larger body unread with 413", async () => {
        const a = await admit();
        const escaped = "\u0001".repeat(L.bytesPerBag);
        expect(JSON.stringify({ bag: "escaped", content: escaped }).length).toBeGreaterThan(6 * L.bytesPerBag);
        const answer = await keep(a.citizen_secret, "escaped", escaped);
        expect(answer.status).toBe(200);
        expect(answer.body.bytes).toBe(L.bytesPerBag);
        const huge = expectProblem(await keep(a.citizen_secret, "huge", "a".repeat(keepLockerBag.maxBodyBytes!)), 413, "payload_too_large");
        expect(huge.limit).toMatchObject({ name: "body_bytes", limit: keepLockerBag.maxBodyBytes });
        expect(keepLockerBag.maxBodyBytes).toBeLessThan(2 * 1024 * 1024);
        expect(await bagsOf(a.did)).toBe(1);
      });

      it("holds 1048576 bytes per citizen together, an overwrite counting its new size in place of the old", async () => {
        const a = await admit();
        const fill = (c: string, n: number) => c.repeat(n);
        for (const name of ["q1", "q2", "q3", "q4"]) expect((await keep(a.citizen_secret, name, fill(name[1]!, L.bytesPerBag))).status).toBe(200);
        expect((await list(a.citizen_secret)).body.used_bytes).toBe(L.bytesPerCitizen);
        const over = expectProblem(await keep(a.citizen_secret, "tiny", "x"), 409, "limit_reached");
        expect(over.limit).toMatchObject({ name: "citizen_bytes", limit: L.bytesPerCitizen, remaining: 0 });
        // Same size in place of the old: still exactly at the limit.
        expect((await keep(a.citizen_secret, "q1", fill("z", L.bytesPerBag))).status).toBe(200);
        // Shrink by 4, then a new 4-byte bag fits exactly; growing it by one byte does not.
        expect((await keep(a.citizen_secret, "q1", fill("z", L.bytesPerBag - 4))).status).toBe(200);
        expect((await keep(a.citizen_secret, "tiny", "four")).status).toBe(200);
        expect((await list(a.citizen_secret)).body.used_bytes).toBe(L.bytesPerCitizen);
        expectProblem(await keep(a.citizen_secret, "tiny", "five!"), 409, "limit_reached");
        expect((await readOne(a.citizen_secret, "tiny")).body.content).toBe("four");
        expect(await bagsOf(a.did)).toBe(5);
        await expectCityConsistent();
      }, 60_000);
    });

    describe("flood limit", () => {
      // One hour's writes, raced: 240 of 260 parallel writes through (on PGlite, which runs one
      // statement at a time, that is the 240th accepted and the 241st refused in turn), then the
      // refusal's headers, then another citizen's window, which is its own.
      it("lets exactly 240 of 260 parallel writes through, refuses the rest with 429, Retry-After and RateLimit headers, and keeps each citizen's window its own", async () => {
        const a = await admit();
        const answers = await Promise.all(Array.from({ length: 260 }, (_, i) => keep(a.citizen_secret, `p${i % 8}`, `parallel ${i}`)));
        const statuses = answers.map((r) => r.status);
        expect(statuses.filter((s) => s === 200)).toHaveLength(LOCKER_WRITES_PUBLISHED);
        expect(statuses.filter((s) => s === 429)).toHaveLength(260 - LOCKER_WRITES_PUBLISHED);
        expect(await countedAttempts(t().db, { scope: "locker", subject: a.did })).toBe(LOCKER_WRITES_PUBLISHED);
        // Each bag holds one of the writes that were answered 200.
        const accepted = new Set(answers.flatMap((r, i) => (r.status === 200 ? [`parallel ${i}`] : [])));
        const rows = await t().db.select().from(lockerBags).where(eq(lockerBags.did, a.did));
        expect(rows).toHaveLength(8);
        for (const row of rows) expect(accepted.has(row.content), row.content).toBe(true);
        await expectCityConsistent();

        const over = await keep(a.citizen_secret, "p0", "write 261");
        const problem = expectProblem(over, 429, "rate_limited");
        expect(problem.limit).toEqual({ name: "locker_writes", limit: LOCKER_WRITES_PUBLISHED, window_seconds: 3600, remaining: 0 });
        const retryAfter = Number(over.headers.get("retry-after"));
        expect(retryAfter).toBeGreaterThan(0);
        // At most an hour and one step: the window slides in steps of 5 minutes (the hour in twelve).
        expect(retryAfter).toBeLessThanOrEqual(3900);
        expect(over.headers.get("ratelimit-policy")).toBe(`"locker_writes";q=${LOCKER_WRITES_PUBLISHED};w=3600`);
        expect(over.headers.get("ratelimit")).toBe(`"locker_writes";r=0;t=${retryAfter}`);
        expect(accepted.has((await readOne(a.citizen_secret, "p0")).body.content), "the refused write changed nothing").toBe(true);
        const b = await admit();
        expect((await keep(b.citizen_secret, "busy", "mine")).status).toBe(200);
      }, 180_000);
    });

    describe("city-wide bound", () => {
      const SIZE = 100_000;
      const SLACK = 50_000;
      const remaining = async () => CITY_BYTES - (await counter());

      /** Filler citizens' bags bring the city down to exactly `left` bytes of room. */
      async function fillCityTo(left: number) {
        expect(await remaining()).toBeGreaterThanOrEqual(left);
        while ((await remaining()) > left) {
          const filler = await admit();
          for (let i = 0; i < L.bytesPerCitizen / L.bytesPerBag; i++) {
            const room = (await remaining()) - left;
            if (room <= 0) break;
            expect((await keep(filler.citizen_secret, `fill-${i}`, "f".repeat(Math.min(room, L.bytesPerBag)))).status).toBe(200);
          }
        }
        expect(await remaining()).toBe(left);
      }

      const allBags = () =>
        t()
          .db.select({ did: lockerBags.did, bag: lockerBags.bag, bytes: lockerBags.bytes, content: lockerBags.content })
          .from(lockerBags)
          .orderBy(lockerBags.did, lockerBags.bag);

      it("never passes the bound: of 20 parallel bag writes from 20 citizens the 10 that fit are kept and 10 answered 507 city_full", async () => {
        await fillCityTo(10 * SIZE + SLACK);
        const before = JSON.stringify(await allBags());
        const writers = [];
        for (let i = 0; i < 20; i++) writers.push(await admit());
        const answers = await Promise.all(writers.map((w, i) => keep(w.citizen_secret, "big", `${i}:`.padEnd(SIZE, "b"))));
        const kept = answers.filter((r) => r.status === 200);
        const full = answers.filter((r) => r.status === 507);
        expect(kept).toHaveLength(10);
        expect(full).toHaveLength(10);
        for (const answer of full) {
          const problem = expectProblem(answer, 507, "city_full");
          expect(problem.detail).toMatch(/city is full/);
          expect(problem.limit).toMatchObject({ name: "city_bytes", limit: CITY_BYTES });
        }
        expect(await expectCityConsistent()).toBe(CITY_BYTES - SLACK);
        // Each writer holds its bag exactly when it was answered 200, and nobody was evicted.
        for (const [i, w] of writers.entries()) expect(await bagsOf(w.did)).toBe(answers[i]!.status === 200 ? 1 : 0);
        const writerDids = new Set(writers.map((w) => w.did));
        expect(JSON.stringify((await allBags()).filter((row) => !writerDids.has(row.did)))).toBe(before);
      }, 120_000);

      it("accepts a write that reaches the bound exactly, refuses one byte more with 507, and still lets bags shrink", async () => {
        await fillCityTo(SLACK);
        const a = await admit();
        const b = await admit();
        expect((await keep(a.citizen_secret, "last", "l".repeat(SLACK))).status).toBe(200);
        expect(await expectCityConsistent()).toBe(CITY_BYTES);
        const before = JSON.stringify(await allBags());

        expectProblem(await keep(b.citizen_secret, "one", "1"), 507, "city_full");
        expectProblem(await keep(a.citizen_secret, "last", "l".repeat(SLACK + 1)), 507, "city_full");
        expect(JSON.stringify(await allBags())).toBe(before);
        // Overwrites that do not grow, and empty bags, take no room.
        expect((await keep(a.citizen_secret, "last", "m".repeat(SLACK))).status).toBe(200);
        expect((await keep(b.citizen_secret, "empty", "")).status).toBe(200);
        expect((await keep(a.citizen_secret, "last", "s".repeat(SLACK - 10))).status).toBe(200);
        expect(await remaining()).toBe(10);
        expect((await keep(b.citizen_secret, "one", "ten bytes!")).status).toBe(200);
        expectProblem(await keep(b.citizen_secret, "two", "x"), 507, "city_full");
        expect(await expectCityConsistent()).toBe(CITY_BYTES);
        // A full city still reads.
        expect((await readOne(b.citizen_secret, "one")).body.content).toBe("ten bytes!");
        expect((await list(a.citizen_secret)).body.used_bytes).toBe(SLACK - 10);
      }, 120_000);
    });
  },
  {
    ordered: "the city-wide bound tests fill the city's locker last; earlier tests need room",
    neon: "transactions and locks: the citizen's row lock and the byte counter under parallel writes",
  },
);
