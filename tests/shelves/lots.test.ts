import { randomBytes } from "node:crypto";
import { and, count, eq, isNull } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, lotLocks } from "@/db/schema";
import { countedAttempts } from "../support/rate";
import { LOT_COUNT, LOT_DOOR } from "@/lib/city/shelves";
import { LOTS } from "@/lib/city/shelves/lots";
import { lockLot, readLots } from "@/lib/doors/declarations/shelves/lots";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

// Lots are shared by every test of a suite: each test uses lots of its own, named here.
const lot = (n: number) => `lot-${String(n).padStart(2, "0")}`;

describeOnDatabases(
  "lot locks",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const act = (secret: string | undefined, name: unknown, action: unknown) => callDoor(lockLot, { bearer: secret, body: { lot: name, action } });
    const liveHolders = async (name: string) =>
      t()
        .db.select()
        .from(lotLocks)
        .where(and(eq(lotLocks.lot, name), isNull(lotLocks.releasedAt)));
    const countedFor = (did: string) => countedAttempts(t().db, { scope: LOT_DOOR, subject: did });
    const lotsRead = async () => (await callDoor(readLots)).body;

    describe("happy path", () => {
      it("publishes the plat's 64 lots, lot-01 to lot-64, to visitors: none held, none occupied", async () => {
        const { status, body, headers } = await callDoor(readLots);
        expect(status).toBe(200);
        expect(headers.get("cache-control")).toBe("no-store");
        expect(Object.keys(body)).toEqual(["now_utc", "lots", "held", "occupied", "note"]);
        expect(LOT_COUNT).toBe(64);
        expect(body.lots.map((l: { lot: string }) => l.lot)).toEqual(LOTS);
        expect(LOTS[0]).toBe("lot-01");
        expect(LOTS[63]).toBe("lot-64");
        expect(body.lots[0]).toEqual({ lot: "lot-01", held: false, holder: null, held_since: null });
        expect(body).toMatchObject({ held: 0, occupied: 0 });
        expect(body.note).toMatch(/never sold/);
        expect(body.note).toMatch(/not occupied/);
      });

      it("locks a lot for its holder and releases it; another citizen may then lock it; the history is kept", async () => {
        const a = await admit();
        const b = await admit();
        const locked = await act(a.citizen_secret, lot(1), "lock");
        expect(locked.status).toBe(200);
        expect(Object.keys(locked.body)[0]).toBe("now_utc");
        expect(locked.body).toMatchObject({ lot: lot(1), action: "lock", held: true, holder: a.did, held_since: locked.body.now_utc, occupied: false });
        expect(locked.body.note).toMatch(/never sold/);
        let read = await lotsRead();
        expect(read.lots[0]).toEqual({ lot: lot(1), held: true, holder: a.did, held_since: locked.body.now_utc });
        expect(read).toMatchObject({ held: 1, occupied: 0 });

        const released = await act(a.citizen_secret, lot(1), "release");
        expect(released.status).toBe(200);
        expect(released.body).toMatchObject({ lot: lot(1), action: "release", held: false, holder: null, held_since: null });
        read = await lotsRead();
        expect(read.lots[0]).toEqual({ lot: lot(1), held: false, holder: null, held_since: null });

        expect((await act(b.citizen_secret, lot(1), "lock")).body).toMatchObject({ held: true, holder: b.did });
        const rows = await t()
          .db.select()
          .from(lotLocks)
          .where(eq(lotLocks.lot, lot(1)));
        expect(rows.map((r) => [r.did, r.releasedAt !== null])).toEqual([
          [a.did, true],
          [b.did, false],
        ]);
      });
    });

    describe("refusals", () => {
      it("answers 409 to a lock on a held lot, a second lock by its holder, and a release by anyone but the holder", async () => {
        const a = await admit();
        const b = await admit();
        expect((await act(a.citizen_secret, lot(2), "lock")).status).toBe(200);
        expectProblem(await act(b.citizen_secret, lot(2), "lock"), 409, "conflict");
        expectProblem(await act(a.citizen_secret, lot(2), "lock"), 409, "conflict");
        expectProblem(await act(b.citizen_secret, lot(2), "release"), 409, "conflict");
        expectProblem(await act(b.citizen_secret, lot(3), "release"), 409, "conflict");
        expect((await liveHolders(lot(2))).map((r) => r.did)).toEqual([a.did]);
        expect(await liveHolders(lot(3))).toEqual([]);
        // A refused action changes nothing, so it is not counted either.
        expect(await countedFor(b.did)).toBe(0);
        expect(await countedFor(a.did)).toBe(1);
      });

      it("answers 404 to a lot outside the plat and 400 to any action but lock and release: land is never sold", async () => {
        const a = await admit();
        for (const name of ["lot-00", "lot-65", "lot-1", "LOT-01", "lot-01 ", "plaza"])
          expectProblem(await act(a.citizen_secret, name, "lock"), 404, "not_found");
        for (const action of ["sell", "buy", "occupy", "LOCK", "", null]) {
          const answer = await act(a.citizen_secret, lot(4), action);
          expectProblem(answer, 400, "bad_request");
          if (action === "sell") expect(answer.body.detail).toMatch(/never sold/);
        }
        for (const body of [
          {},
          { lot: lot(4) },
          { action: "lock" },
          { lot: 4, action: "lock" },
          { lot: "", action: "lock" },
          { lot: lot(4), action: "lock", price: 1 },
        ]) {
          expectProblem(await callDoor(lockLot, { bearer: a.citizen_secret, body }), 400, "bad_request");
        }
        expect(await liveHolders(lot(4))).toEqual([]);
        expect(await countedFor(a.did)).toBe(0);
      });

      it("refuses a lock without credentials, or with a DID or an unknown secret, with 401", async () => {
        const a = await admit();
        for (const bearer of [undefined, a.did, `city_sk_${randomBytes(36).toString("hex")}`])
          expectProblem(await act(bearer, lot(4), "lock"), 401, "unauthorized");
        expect(await liveHolders(lot(4))).toEqual([]);
      });

      it("refuses a restricted citizen's lock with 403 (lots cannot park), lets it release its own lot, and the plat stays readable", async () => {
        const a = await admit();
        expect((await act(a.citizen_secret, lot(5), "lock")).status).toBe(200);
        expect((await act(a.citizen_secret, lot(26), "lock")).status).toBe(200);
        await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
        expectProblem(await act(a.citizen_secret, lot(6), "lock"), 403, "forbidden");
        expect(await liveHolders(lot(6))).toEqual([]);
        expect((await lotsRead()).lots[4]).toMatchObject({ lot: lot(5), held: true, holder: a.did });
        const released = await act(a.citizen_secret, lot(5), "release");
        expect(released.status).toBe(200);
        expect(released.body).toMatchObject({ lot: lot(5), action: "release", held: false });
        expect(await liveHolders(lot(5))).toEqual([]);
        // Release stays a release of one's own lot: another's lot is still a 409.
        const b = await admit();
        expect((await act(b.citizen_secret, lot(27), "lock")).status).toBe(200);
        expectProblem(await act(a.citizen_secret, lot(27), "release"), 409, "conflict");
        expect((await liveHolders(lot(26))).map((r) => r.did)).toEqual([a.did]);
      });
    });

    describe("limits and concurrency", () => {
      it("counts locks only (spec: lot locks, 10 per hour): five lock-and-release rounds leave five locks, the 11th lock is 429", async () => {
        const a = await admit();
        for (let n = 7; n <= 11; n++) {
          expect((await act(a.citizen_secret, lot(n), "lock")).status, `lock ${lot(n)}`).toBe(200);
          expect((await act(a.citizen_secret, lot(n), "release")).status, `release ${lot(n)}`).toBe(200);
        }
        expect(await countedFor(a.did)).toBe(5);
        for (let n = 28; n <= 32; n++) expect((await act(a.citizen_secret, lot(n), "lock")).status, `lock ${lot(n)}`).toBe(200);
        expect(await countedFor(a.did)).toBe(10);
        const over = await act(a.citizen_secret, lot(12), "lock");
        expectProblem(over, 429, "rate_limited");
        expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
        // At most an hour and one step: the window slides in steps of 5 minutes (the hour in twelve).
        expect(Number(over.headers.get("retry-after"))).toBeLessThanOrEqual(3900);
        expect(over.headers.get("ratelimit-policy")).toBe('"lot-locks";q=10;w=3600');
        expect(over.headers.get("ratelimit")).toMatch(/^"lot-locks";r=0;t=\d+$/);
        expect(over.body.limit).toMatchObject({ name: "lot-locks", limit: 10, window_seconds: 3600, remaining: 0 });
        expect(await liveHolders(lot(12))).toEqual([]);
        // With the window full, releasing its own lots is still possible, and counts nothing.
        for (let n = 28; n <= 32; n++) expect((await act(a.citizen_secret, lot(n), "release")).status, `release ${lot(n)}`).toBe(200);
        expect(await countedFor(a.did)).toBe(10);
        // Another citizen's window is its own.
        const b = await admit();
        expect((await act(b.citizen_secret, lot(12), "lock")).status).toBe(200);
      });

      it("gives one lot to exactly one of 10 parallel lockers and a clean 409 to the other 9", async () => {
        const lockers = await Promise.all(Array.from({ length: 10 }, () => admit()));
        const answers = await Promise.all(lockers.map((c) => act(c.citizen_secret, lot(13), "lock")));
        const won = answers.filter((r) => r.status === 200);
        expect(won).toHaveLength(1);
        const lost = answers.filter((r) => r.status !== 200);
        expect(lost).toHaveLength(9);
        for (const answer of lost) expectProblem(answer, 409, "conflict");
        const holders = await liveHolders(lot(13));
        expect(holders.map((r) => r.did)).toEqual([won[0]!.body.holder]);
      });

      it("lets exactly 10 of 12 parallel locks through and every parallel release of its own lots, even with the window full", async () => {
        const a = await admit();
        // Six lots already held by the citizen (set up directly, uncounted), twelve free ones.
        const held = [14, 15, 16, 17, 18, 19].map(lot);
        const free = [20, 21, 22, 23, 24, 25, 33, 34, 35, 36, 37, 38].map(lot);
        await t()
          .db.insert(lotLocks)
          .values(held.map((name) => ({ lot: name, did: a.did, lockedAt: new Date() })));
        const answers = await Promise.all([
          ...held.map((name) => act(a.citizen_secret, name, "release")),
          ...free.map((name) => act(a.citizen_secret, name, "lock")),
        ]);
        const statuses = answers.map((r) => r.status);
        expect(statuses.slice(0, held.length)).toEqual([200, 200, 200, 200, 200, 200]);
        expect(statuses.slice(held.length).filter((s) => s === 200)).toHaveLength(10);
        const refused = answers.filter((r) => r.status === 429);
        expect(refused).toHaveLength(2);
        for (const answer of refused) expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(await countedFor(a.did)).toBe(10);
        // Every answer matches the plat: a 200 lock holds its lot, a 429 lock does not; every release freed its lot.
        for (const [i, name] of [...held, ...free].entries()) {
          const isHeld = (await liveHolders(name)).length === 1;
          const wasLock = i >= held.length;
          expect(isHeld, `${name}`).toBe(wasLock && statuses[i] === 200);
        }
      });
    });
  },
  { ordered: "the plat starts empty and each test holds lots the next ones count", neon: "transactions and locks: one lot to one holder under parallel locks" },
);
