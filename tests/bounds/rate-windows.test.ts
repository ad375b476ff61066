import { count, eq } from "drizzle-orm";
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, contentRefusals, tierEvents, vaultNotes } from "@/db/schema";
import { countedAttempts } from "../support/rate";
import { takeSlot } from "@/lib/city/bounds";
import { recordRefusal } from "@/lib/city/restriction";
import { keepLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/*
 * Every rate window rolls over: an event whose bucket (a twelfth of the window) aged past the window frees its slot again. takeSlot backs
 * every window (vault, mail, boards, lots, locker writes, seals, appeals, tokens, the clinic's
 * caps); it takes `now`, so time is moved, never waited for. The vault door shows the same through
 * a door, with the clock moved past the spec's hour. The restriction trigger has a window of its
 * own (3 refusals within 86400 s): refusals that old no longer count toward it.
 */
describeOnDatabases("rate windows roll over with now", (t) => {
  beforeAll(() => useDatabase(t().db));
  afterEach(() => vi.useRealTimers());

  it("refuses the slot past the limit until the oldest event's bucket is a whole window old, then frees exactly one", async () => {
    // A 60 s window counts in twelve buckets of 5 s: an attempt counts for 60 s and what is left of its bucket.
    const window = { scope: `test-window-${Math.random().toString(36).slice(2)}`, subject: "someone", limit: 3, windowSeconds: 60 };
    const start = new Date("2031-01-01T00:00:00.000Z"); // a bucket's first moment
    const at = (seconds: number) => new Date(start.getTime() + seconds * 1000);
    expect((await takeSlot(t().db, window, at(0))).allowed).toBe(true);
    expect((await takeSlot(t().db, window, at(10))).allowed).toBe(true);
    expect((await takeSlot(t().db, window, at(20))).allowed).toBe(true);
    const full = await takeSlot(t().db, window, at(30));
    // The first attempt's bucket (0 to 5 s) leaves the window at 65 s.
    expect(full).toEqual({ allowed: false, used: 3, remaining: 0, retryAfterSeconds: 35 });
    // A whole window after the first event, its bucket still counts: Retry-After says the 5 s left.
    expect(await takeSlot(t().db, window, at(60))).toMatchObject({ allowed: false, retryAfterSeconds: 5 });
    expect(await takeSlot(t().db, window, at(64.5))).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    // Once its bucket is a whole window old: its slot is free again, and only its slot.
    expect(await takeSlot(t().db, window, at(65))).toMatchObject({ allowed: true, used: 3, remaining: 0 });
    expect((await takeSlot(t().db, window, at(66))).allowed).toBe(false);
    // Long after, the whole window is free; the aged buckets are gone from the row.
    expect(await takeSlot(t().db, window, at(3600))).toMatchObject({ allowed: true, used: 1, remaining: 2 });
    expect(await countedAttempts(t().db, { scope: window.scope })).toBe(1);
  });

  it("never lets more than the limit into any window's length, wherever the attempts fall in their buckets", async () => {
    const window = { scope: `test-edge-${Math.random().toString(36).slice(2)}`, subject: "someone", limit: 2, windowSeconds: 60 };
    const start = new Date("2031-01-01T00:00:00.000Z");
    const at = (seconds: number) => new Date(start.getTime() + seconds * 1000);
    // Two at the end of a bucket: 60 s later (the next bucket's end) they still count, so a third is refused
    // though a sliding window of exactly 60 s would hold none of them at 64.999 s.
    expect((await takeSlot(t().db, window, at(4.999))).allowed).toBe(true);
    expect((await takeSlot(t().db, window, at(4.999))).allowed).toBe(true);
    expect((await takeSlot(t().db, window, at(59.999))).allowed).toBe(false);
    expect((await takeSlot(t().db, window, at(64.999))).allowed).toBe(false);
    expect((await takeSlot(t().db, window, at(65))).allowed).toBe(true);
  });

  it("keeps a citizen's 31st vault note of the hour out, and takes it once the hour has passed", async () => {
    const me = await admit();
    const write = (content: string) => callDoor(writeVault, { bearer: me.citizen_secret, body: { content } });
    // The first moment of a 5-minute bucket, a day ahead (the clock stands still: every note at once).
    const start = new Date(Math.ceil((Date.now() + 24 * 3600 * 1000) / 300_000) * 300_000);
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    for (let i = 1; i <= 30; i++) expect((await write(`note ${i}`)).status, `note ${i}`).toBe(200);
    expect((await write("the 31st, parked")).status).toBe(202);
    // 59 minutes on: the spec's window (30 an hour) is still full.
    vi.setSystemTime(new Date(start.getTime() + 59 * 60 * 1000));
    expect((await write("still within the hour, parked")).status).toBe(202);
    // An hour on, the notes' bucket (5 minutes: the hour in twelve) still counts; once it is an hour old, the window is empty again.
    vi.setSystemTime(new Date(start.getTime() + 3600 * 1000));
    expect((await write("an hour on, the bucket still counts, parked")).status).toBe(202);
    vi.setSystemTime(new Date(start.getTime() + 3900 * 1000));
    expect((await write("a new hour")).status).toBe(200);
    const stored = await t().db.select({ n: count() }).from(vaultNotes).where(eq(vaultNotes.did, me.did));
    expect(stored[0]!.n).toBe(31);
  });

  it("counts only refusals younger than 86400 s toward the restriction trigger: older ones never restrict", async () => {
    const me = await admit();
    const start = new Date(Date.now() + 3 * 86_400_000);
    const at = (seconds: number) => new Date(start.getTime() + seconds * 1000);
    const refuse = (seconds: number) => recordRefusal(t().db, { did: me.did, door: "keep-locker", rule: "test", now: at(seconds) });
    const tier = async () => (await t().db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, me.did)))[0]!.tier;
    expect(await refuse(0)).toEqual({ restricted: false });
    expect(await refuse(100)).toEqual({ restricted: false });
    // The third refusal, exactly 86400 s after the first: the first has left the window, two count.
    expect(await refuse(86_400)).toEqual({ restricted: false });
    // The fourth, exactly 86400 s after the second: again only two within the window.
    expect(await refuse(86_500)).toEqual({ restricted: false });
    expect(await tier()).toBe("citizen");
    // 86399 s after the third, it is still within the window with the fourth and this one: three restrict.
    expect(await refuse(86_400 + 86_399)).toEqual({ restricted: true });
    expect(await tier()).toBe("restricted");
    const events = await t().db.select().from(tierEvents).where(eq(tierEvents.did, me.did));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event: "restrict", fromTier: "citizen", toTier: "restricted", at: at(86_400 + 86_399) });
    // Nothing is deleted: every refusal, aged or not, is still on the record.
    expect((await t().db.select({ n: count() }).from(contentRefusals).where(eq(contentRefusals.did, me.did)))[0]!.n).toBe(5);
  });

  it("lets a citizen whose two refusals aged past the day be refused again at the door without being restricted", async () => {
    const me = await admit();
    const refusedBag = () => callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "keys", content: `city_sk_${"0f".repeat(36)}` } });
    const start = new Date(Date.now() + 7 * 86_400_000);
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    expect((await refusedBag()).status).toBe(422);
    expect((await refusedBag()).status).toBe(422);
    // A day and a second later: the two old refusals no longer count, so two more do not restrict.
    vi.setSystemTime(new Date(start.getTime() + 86_401 * 1000));
    expect((await refusedBag()).status).toBe(422);
    expect((await refusedBag()).status).toBe(422);
    expect((await t().db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, me.did)))[0]!.tier).toBe("citizen");
    expect((await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "notes", content: "still open" } })).status).toBe(200);
    // The third within the day restricts, and the door that cannot park refuses from then on.
    expect((await refusedBag()).status).toBe(422);
    expect((await t().db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, me.did)))[0]!.tier).toBe("restricted");
    expect((await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "notes", content: "now refused" } })).status).toBe(403);
  });
});
