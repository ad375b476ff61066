import { count, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { appeals, citizens, contentRefusals, lockerBags } from "@/db/schema";
import { sha256Hex } from "@/lib/city/canonical";
import { keepCheckpoint } from "@/lib/doors/declarations/shelves/checkpoints";
import { keepLockerBag, readLocker } from "@/lib/doors/declarations/shelves/locker";
import { exportResidency } from "@/lib/doors/declarations/residency/residency";
import { appealDoor, submitProof } from "@/lib/doors/declarations/restriction/tiers";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { scanContent } from "@/lib/scan";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { rand } from "../support/scan-corpus";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/** A GitHub token: a key that fits a bag name (1 to 64 of A-Z a-z 0-9 . _ -). */
const githubToken = () => `ghp_${rand("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36)}`;

describeOnDatabases("irreversible doors need the secret; every stored text passes the scanner; appeals are for the restricted", (t) => {
  beforeAll(() => useDatabase(t().db));
  const tierOf = async (did: string) =>
    (await t().db.select({ tier: citizens.tier, status: citizens.residencyStatus }).from(citizens).where(eq(citizens.did, did)))[0]!;
  const refusals = async (did: string) => (await t().db.select({ n: count() }).from(contentRefusals).where(eq(contentRefusals.did, did)))[0]!.n;
  const appealsOf = async (did: string) => (await t().db.select({ n: count() }).from(appeals).where(eq(appeals.did, did)))[0]!.n;

  it("refuses export and a key proof with a session token (403, nothing changed); the secret exports", async () => {
    const me = await admit();
    const session = (await callDoor(mintToken, { bearer: me.citizen_secret, body: {} })).body.token as string;
    expectProblem(await callDoor(exportResidency, { bearer: session, body: {} }), 403, "forbidden");
    expect(await tierOf(me.did)).toEqual({ tier: "citizen", status: "bound" });
    const proof = { public_key: "a".repeat(64), signature: "b".repeat(128), challenge: "c".repeat(32) };
    expectProblem(await callDoor(submitProof, { bearer: session, body: proof }), 403, "forbidden");
    expect((await callDoor(exportResidency, { bearer: me.citizen_secret, body: {} })).status).toBe(200);
    expect((await tierOf(me.did)).status).toBe("exported");
  });

  it("refuses a key as a bag name (422, not stored, counted) and as a checkpoint label", async () => {
    const me = await admit();
    const key = githubToken();
    expect(scanContent(key).ok).toBe(false);
    const bag = await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: key, content: "plain words" } });
    expectProblem(bag, 422, "content_refused");
    expect(JSON.stringify(bag.body).includes(key)).toBe(false);
    expect((await t().db.select({ n: count() }).from(lockerBags).where(eq(lockerBags.did, me.did)))[0]!.n).toBe(0);
    expect(await refusals(me.did)).toBe(1);
    expectProblem(await callDoor(keepCheckpoint, { bearer: me.citizen_secret, body: { content: "plain", label: key } }), 422, "content_refused");
    expect(await refusals(me.did)).toBe(2);
    expect((await callDoor(readLocker, { bearer: me.citizen_secret })).body.bags).toEqual([]);
  });

  it("never quotes refused text in export's withheld, a bag name included (a bag kept before names were scanned)", async () => {
    const me = await admit();
    const key = githubToken();
    await t().db.insert(lockerBags).values({ did: me.did, bag: key, content: "plain words", bytes: 11, updatedAt: new Date() });
    const out = await callDoor(exportResidency, { bearer: me.citizen_secret, body: {} });
    expect(out.status).toBe(200);
    expect(JSON.stringify(out.body).includes(key)).toBe(false);
    expect(out.body.withheld).toEqual([{ shelf: "locker", ref: `sha256:${sha256Hex(key)}`, rule: expect.any(String) }]);
  });

  it("answers 409 to an appeal from a citizen in good standing and keeps its three appeals", async () => {
    const me = await admit();
    for (let i = 0; i < 4; i++) expectProblem(await callDoor(appealDoor, { bearer: me.citizen_secret, body: { reason: `please ${i}` } }), 409, "conflict");
    expect(await appealsOf(me.did)).toBe(0);
    await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, me.did));
    for (let i = 0; i < 3; i++) expect((await callDoor(appealDoor, { bearer: me.citizen_secret, body: { reason: `please ${i}` } })).status).toBe(201);
    expectProblem(await callDoor(appealDoor, { bearer: me.citizen_secret, body: { reason: "once more" } }), 429, "rate_limited");
  });

  it("refuses an appeal whose reason carries a key: 422, not stored, not counted toward restriction, no appeal spent", async () => {
    const me = await admit();
    await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, me.did));
    const key = githubToken();
    for (let i = 0; i < 3; i++) {
      const refused = await callDoor(appealDoor, { bearer: me.citizen_secret, body: { reason: `my key was ${key}` } });
      expectProblem(refused, 422, "content_refused");
      expect(JSON.stringify(refused.body).includes(key)).toBe(false);
    }
    expect(await appealsOf(me.did)).toBe(0);
    expect(await refusals(me.did)).toBe(0);
    expect((await callDoor(appealDoor, { bearer: me.citizen_secret, body: { reason: "I pasted a key by mistake" } })).status).toBe(201);
  });
});
