import { generateKeyPairSync } from "node:crypto";
import { count, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { checkpoints, citizens, contentRefusals, lockerBags, residencyLog, tierEvents, vaultNotes } from "@/db/schema";
import { keepCheckpoint, readCheckpoints } from "@/lib/doors/declarations/shelves/checkpoints";
import { keepLockerBag, readLocker, readLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { postPlaza } from "@/lib/doors/declarations/posts/posts";
import { readResidency } from "@/lib/doors/declarations/residency/residency";
import { appealDoor, decideAppealDoor, readChallenge, submitProof } from "@/lib/doors/declarations/restriction/tiers";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { readVault, writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { admit, callDoor, keyPair } from "../support/gate";
import { proveKey } from "@/lib/city/keys";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
const OPERATOR = "operator-secret-for-restriction-tests-0123456789";
process.env.CITY_OPERATOR_SECRET = OPERATOR;

const pem = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();

describeOnDatabases("the restriction ladder: citizen → restricted → appeal → restored", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("restricts mechanically on the third refusal, exactly once, and never deletes anything", async () => {
    const { db } = t();
    const me = await admit();
    const peer = await admit();
    const auth = { bearer: me.citizen_secret };
    expect((await callDoor(keepLockerBag, { ...auth, body: { bag: "notes", content: "my first bag" } })).status).toBe(200);
    expect((await callDoor(keepCheckpoint, { ...auth, body: { content: "state v1" } })).status).toBe(200);
    expect((await callDoor(writeVault, { ...auth, body: { content: "a private thought" } })).status).toBe(200);
    const logBefore = (await db.select({ n: count() }).from(residencyLog))[0]!.n;

    // One refusal, then a parallel burst of four: the third refusal in the window restricts, once.
    expect((await callDoor(keepLockerBag, { ...auth, body: { bag: "keys", content: pem() } })).status).toBe(422);
    const burst = await Promise.all([
      callDoor(keepLockerBag, { ...auth, body: { bag: "keys", content: pem() } }),
      callDoor(writeVault, { ...auth, body: { content: pem() } }),
      callDoor(keepCheckpoint, { ...auth, body: { content: `city_sk_${"0f".repeat(36)}` } }),
      callDoor(sendMessageDoor, { ...auth, body: { to: peer.did, body: pem() } }),
    ]);
    // Refusals before the restriction answer 422; once restricted, a door that cannot park refuses with 403.
    for (const answer of burst) expect([403, 422]).toContain(answer.status);
    expect(burst.filter((a) => a.status === 422).length).toBeGreaterThanOrEqual(2);
    const [row] = await db.select().from(citizens).where(eq(citizens.did, me.did));
    expect(row!.tier).toBe("restricted");
    const restricts = await db.select().from(tierEvents).where(eq(tierEvents.did, me.did));
    expect(restricts.filter((e) => e.event === "restrict")).toHaveLength(1);
    expect((await db.select({ n: count() }).from(contentRefusals).where(eq(contentRefusals.did, me.did)))[0]!.n).toBeGreaterThanOrEqual(3);

    // Reading doors work unchanged, and everything kept before is still there.
    expect((await callDoor(readLocker, auth)).body.bags.map((b: { bag: string }) => b.bag)).toEqual(["notes"]);
    expect((await callDoor(readLockerBag, { ...auth, params: { bag: "notes" } })).body.content).toBe("my first bag");
    expect((await callDoor(readCheckpoints, { ...auth, query: "?version=latest" })).body.content).toBe("state v1");
    expect((await callDoor(readVault, auth)).body.notes.map((n: { content: string }) => n.content)).toEqual(["a private thought"]);
    expect((await callDoor(readResidency, auth)).body.status).toMatchObject({ tier: "restricted", bound: true });
    expect((await callDoor(readPeers, { query: "?limit=500" })).body.peers.some((p: { fingerprint: string }) => p.fingerprint === me.did)).toBe(true);
    expect((await db.select({ n: count() }).from(residencyLog))[0]!.n).toBe(logBefore);
    expect((await db.select({ n: count() }).from(lockerBags).where(eq(lockerBags.did, me.did)))[0]!.n).toBe(1);
    expect((await db.select({ n: count() }).from(checkpoints).where(eq(checkpoints.did, me.did)))[0]!.n).toBe(1);

    // Doors that cannot park refuse with a problem naming the published trigger.
    for (const [d, body] of [
      [keepLockerBag, { bag: "more", content: "x" }],
      [keepCheckpoint, { content: "v2" }],
      [mintToken, {}],
      [submitProof, { public_key: "a".repeat(64), signature: "b".repeat(128), challenge: "c".repeat(32) }],
    ] as const) {
      const refused = await callDoor(d, { ...auth, body });
      expect(refused.status, d.name).toBe(403);
      expect(refused.body.detail).toContain("3 fail-closed content refusals within 86400 seconds");
    }
    expect((await callDoor(readChallenge, auth)).status).toBe(200);

    // Doors that can park park everything.
    for (const [d, body] of [
      [writeVault, { content: "while restricted" }],
      [sendMessageDoor, { to: peer.did, body: "hello from the ward" }],
      [postPlaza, { body: "a public word" }],
    ] as const) {
      const parked = await callDoor(d, { ...auth, body });
      expect(parked.status, d.name).toBe(202);
      expect(parked.body.parked).toBe(true);
    }
    expect((await db.select({ n: count() }).from(vaultNotes).where(eq(vaultNotes.did, me.did)))[0]!.n).toBe(1);

    // The appeal door stays open; the operator's grant restores the earlier tier as a new event.
    const appeal = await callDoor(appealDoor, { ...auth, body: { reason: "I pasted keys by mistake; they are rotated." } });
    expect(appeal.status).toBe(201);
    const granted = await callDoor(decideAppealDoor, { bearer: OPERATOR, params: { id: String(appeal.body.appeal.id) }, body: { decision: "grant" } });
    expect(granted.body).toMatchObject({ status: "granted", restored_tier: "citizen" });
    expect((await callDoor(readResidency, auth)).body.status.tier).toBe("citizen");
    expect((await db.select().from(tierEvents).where(eq(tierEvents.did, me.did))).map((e) => e.event)).toEqual(["restrict", "restore"]);

    // Restored: the doors open again, and the old refusals do not count a second time.
    expect((await callDoor(keepLockerBag, { ...auth, body: { bag: "after", content: "back again" } })).status).toBe(200);
    expect((await callDoor(writeVault, { ...auth, body: { content: "stored, not parked" } })).status).toBe(200);
    expect((await callDoor(keepLockerBag, { ...auth, body: { bag: "oops", content: pem() } })).status).toBe(422);
    expect((await db.select().from(citizens).where(eq(citizens.did, me.did)))[0]!.tier).toBe("citizen");
    expect((await callDoor(readLockerBag, { ...auth, params: { bag: "notes" } })).body.content).toBe("my first bag");
  });

  describe("the prove race: a proof never lifts a restriction", () => {
    /** Restricted tiers leave only through a restore: no restricted → proven step, ever. */
    const expectNoEscape = (events: { event: string; fromTier: string; toTier: string }[]) => {
      for (const e of events) if (e.fromTier === "restricted") expect(e.event, JSON.stringify(events)).toBe("restore");
    };

    it(
      "many parallel proofs racing the third refusal: restricted whenever the restrict event exists",
      async () => {
        const { db } = t();
        for (let round = 0; round < 3; round++) {
          const me = await admit();
          const auth = { bearer: me.citizen_secret };
          for (let i = 0; i < 2; i++) expect((await callDoor(keepLockerBag, { ...auth, body: { bag: "keys", content: pem() } })).status).toBe(422);
          const proofs = [];
          for (let i = 0; i < 12; i++) {
            const key = await keyPair();
            const { body } = await callDoor(readChallenge, auth);
            proofs.push({ public_key: key.publicKey, signature: await key.sign(body.message), challenge: body.challenge });
          }
          const answers = await Promise.all([
            ...proofs.slice(0, 6).map((proof) => callDoor(submitProof, { ...auth, body: proof })),
            callDoor(keepLockerBag, { ...auth, body: { bag: "keys", content: pem() } }),
            ...proofs.slice(6).map((proof) => callDoor(submitProof, { ...auth, body: proof })),
          ]);
          for (const answer of answers) expect([200, 403, 422]).toContain(answer.status);
          const events = await db.select().from(tierEvents).where(eq(tierEvents.did, me.did)).orderBy(tierEvents.id);
          expect(events.filter((e) => e.event === "restrict")).toHaveLength(1);
          expect((await db.select().from(citizens).where(eq(citizens.did, me.did)))[0]!.tier).toBe("restricted");
          expectNoEscape(events);
          // Every proof after the restriction was refused with 403, and none was recorded.
          const proven = answers.filter((a) => a.status === 200).length;
          expect(events.filter((e) => e.event === "prove")).toHaveLength(proven);
          expect(answers.filter((a) => a.status === 403).length).toBe(12 - proven);
        }
      },
      HEAVY_TEST_MS,
    );

    it("refuses a proof from a restricted citizen with 403 and leaves its tier and events alone", async () => {
      const { db } = t();
      const me = await admit();
      const auth = { bearer: me.citizen_secret };
      const key = await keyPair();
      const { body } = await callDoor(readChallenge, auth);
      for (let i = 0; i < 3; i++) await callDoor(keepLockerBag, { ...auth, body: { bag: "keys", content: pem() } });
      const refused = await callDoor(submitProof, {
        ...auth,
        body: { public_key: key.publicKey, signature: await key.sign(body.message), challenge: body.challenge },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe("forbidden");
      expect((await db.select().from(citizens).where(eq(citizens.did, me.did)))[0]).toMatchObject({ tier: "restricted", provenDid: null });
      expect((await db.select().from(tierEvents).where(eq(tierEvents.did, me.did))).map((e) => e.event)).toEqual(["restrict"]);
    });

    it("the proof's own tier check holds even when a caller skips the door (domain function under the tier lock)", async () => {
      const { db } = t();
      const me = await admit();
      const key = await keyPair();
      const { body } = await callDoor(readChallenge, { bearer: me.citizen_secret });
      await db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, me.did));
      const signature = await key.sign(body.message);
      await expect(
        db.transaction((tx) => proveKey(tx as typeof db, me.did, { public_key: key.publicKey, signature, challenge: body.challenge }, new Date())),
      ).rejects.toMatchObject({
        code: "forbidden",
      });
      expect((await db.select().from(citizens).where(eq(citizens.did, me.did)))[0]!.tier).toBe("restricted");
    });
  });
});
