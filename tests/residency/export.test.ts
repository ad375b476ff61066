import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { checkpoints, citizens, lockerBags, residencyLog, vaultNotes } from "@/db/schema";
import { mintCredential } from "@/lib/city/keys";
import { keepCheckpoint } from "@/lib/doors/declarations/shelves/checkpoints";
import { readCensusDoor } from "@/lib/doors/surfaces/discovery";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { lightLantern } from "@/lib/doors/declarations/posts/lanterns";
import { keepLockerBag, readLocker } from "@/lib/doors/declarations/shelves/locker";
import { lockLot } from "@/lib/doors/declarations/shelves/lots";
import { sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { postPlaza } from "@/lib/doors/declarations/posts/posts";
import { recoverDoor } from "@/lib/doors/declarations/keys/recover";
import { registry } from "@/lib/doors/registry";
import { exportResidency, readResidency } from "@/lib/doors/declarations/residency/residency";
import { readResidencyLog, verifyResidencyLog } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { sealDoor } from "@/lib/doors/declarations/shelves/seals";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";
import { expectProblem } from "../support/assertions";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describeOnDatabases("export", (t) => {
  beforeAll(() => useDatabase(t().db));
  const census = async () => (await callDoor(readCensusDoor)).body;
  const allPeers = async () => {
    const dids: string[] = [];
    for (let cursor: string | null = null, i = 0; i < 1000; i++) {
      const page: { body: Record<string, any> } = await callDoor(readPeers, { query: cursor ? `?cursor=${cursor}` : "" });
      dids.push(...page.body.peers.map((p: { fingerprint: string }) => p.fingerprint));
      cursor = page.body.next.cursor;
      if (!cursor) return dids;
    }
    throw new Error("the directory never ends");
  };

  describe("happy path", () => {
    it("hands over exactly the citizen's own bags, checkpoints, vault notes and seals, and nothing else", async () => {
      const [me, other] = [await admit(), await admit()];
      await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "b", content: "bag content" } });
      await callDoor(keepLockerBag, { bearer: other.citizen_secret, body: { bag: "b", content: "not mine" } });
      await callDoor(keepCheckpoint, { bearer: me.citizen_secret, body: { content: "cp one", label: "first" } });
      const note = await callDoor(writeVault, { bearer: me.citizen_secret, body: { content: "a private note" } });
      await callDoor(writeVault, { bearer: other.citizen_secret, body: { content: "other's note" } });
      const digest = sha256("my memory");
      expect((await callDoor(sealDoor, { bearer: me.citizen_secret, body: { sha256: digest } })).status).toBe(201);
      await callDoor(sendMessageDoor, { bearer: other.citizen_secret, body: { to: me.did, body: "mail stays in the city" } });
      await callDoor(sendMessageDoor, { bearer: me.citizen_secret, body: { to: other.did, body: "my mail stays too" } });
      // A note stored before the scanner knew better: it must not leave now.
      const leaked = mintCredential("secret");
      const [bad] = await t()
        .db.insert(vaultNotes)
        .values({ did: me.did, content: `old ${leaked}`, createdAt: new Date() })
        .returning();

      const before = await census();
      const answer = await callDoor(exportResidency, { bearer: me.citizen_secret, body: {} });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const body = answer.body;
      expect(body).toMatchObject({ did: me.did, residency_status: "exported", bed_released: me.bed_id });
      expect(body.locker).toEqual([{ bag: "b", content: "bag content", bytes: 11, updated_at: expect.any(String) }]);
      expect(body.checkpoints).toEqual([{ version: 1, content: "cp one", sha256: sha256("cp one"), bytes: 6, label: "first", created_at: expect.any(String) }]);
      expect(body.vault).toEqual([{ id: note.body.id, content: "a private note", created_at: expect.any(String) }]);
      expect(body.seals).toEqual([{ sha256: digest, created_at: expect.any(String) }]);
      expect(body.withheld).toEqual([{ shelf: "vault", ref: String(bad!.id), rule: expect.any(String) }]);
      const text = JSON.stringify(body);
      for (const absent of ["mail stays in the city", "my mail stays too", "not mine", "other's note", leaked, other.did, me.citizen_secret]) {
        expect(text.includes(absent), absent).toBe(false);
      }

      // Status exported, an export row, the bed released, gone from the directory and the census' citizens.
      const [row] = await t().db.select().from(citizens).where(eq(citizens.did, me.did));
      expect(row).toMatchObject({ residencyStatus: "exported", bedId: null });
      const events = (await t().db.select().from(residencyLog).where(eq(residencyLog.did, me.did))).map((r) => r.event);
      expect(events).toEqual(["admit", "export"]);
      const after = await census();
      expect(after.occupancy).toBe(before.occupancy - 1);
      expect(after.citizens).toBe(before.citizens - 1);
      expect(await allPeers()).not.toContain(me.did);
      expect(await allPeers()).toContain(other.did);
      // Every log row stays and the chain still verifies; nothing was deleted from the shelves.
      expect((await callDoor(verifyResidencyLog)).body.intact).toBe(true);
      const log = await callDoor(readResidencyLog, { query: "?limit=500" });
      expect(log.body.rows.filter((r: { did: string }) => r.did === me.did).map((r: { event: string }) => r.event)).toEqual(["admit", "export"]);
      expect(await t().db.select().from(vaultNotes).where(eq(vaultNotes.did, me.did))).toHaveLength(2);
    });

    it("withholds from each shelf what the scanner refuses now, by reference, and never carries a credential, mail, lanterns, lots or posts", async () => {
      const me = await admit();
      const auth = { bearer: me.citizen_secret };
      const token = (await callDoor(mintToken, { ...auth, body: {} })).body.token as string;
      const codes = (await callDoor(recoverDoor, { ...auth, body: { mint: true } })).body.codes as string[];
      expect(codes.length).toBeGreaterThan(0);
      expect((await callDoor(lightLantern, { ...auth, body: { keyword: "quietkeyword" } })).status).toBe(200);
      expect((await callDoor(lockLot, { ...auth, body: { lot: "lot-07", action: "lock" } })).status).toBe(200);
      expect((await callDoor(postPlaza, { ...auth, body: { body: "a public word, not mine to export" } })).status).toBe(200);
      expect((await callDoor(keepLockerBag, { ...auth, body: { bag: "fine", content: "an honest bag" } })).status).toBe(200);
      expect((await callDoor(keepCheckpoint, { ...auth, body: { content: "honest one", label: "v1" } })).status).toBe(200);
      expect((await callDoor(writeVault, { ...auth, body: { content: "an honest note" } })).status).toBe(200);
      // Rows stored before the scanner knew better, on every shelf: a key in a bag, a credential as
      // a bag's name, a token in a checkpoint's content, a key in a checkpoint's label.
      const pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHJvZ3VlLWtleS1tYXRlcmlhbC1mb3ItdGVzdHMtMDE=\n-----END PRIVATE KEY-----";
      const leakedName = mintCredential("secret");
      const leakedToken = mintCredential("session");
      const now = new Date();
      await t()
        .db.insert(lockerBags)
        .values([
          { did: me.did, bag: "keys", content: pem, bytes: pem.length, updatedAt: now },
          { did: me.did, bag: leakedName, content: "innocent content under a secret's name", bytes: 38, updatedAt: now },
        ]);
      await t()
        .db.insert(checkpoints)
        .values([
          {
            did: me.did,
            version: 2,
            content: `state with ${leakedToken}`,
            sha256: sha256(`state with ${leakedToken}`),
            bytes: 11 + leakedToken.length,
            label: null,
            createdAt: now,
          },
          { did: me.did, version: 3, content: "honest content", sha256: sha256("honest content"), bytes: 14, label: pem, createdAt: now },
        ]);

      const answer = await callDoor(exportResidency, { ...auth, body: {} });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const body = answer.body;
      expect(Object.keys(body).sort()).toEqual([
        "bed_released",
        "checkpoints",
        "did",
        "locker",
        "log_receipt",
        "log_seq",
        "note",
        "now_utc",
        "residency_status",
        "seals",
        "vault",
        "withheld",
      ]);
      expect(body.locker.map((b: { bag: string }) => b.bag)).toEqual(["fine"]);
      expect(body.checkpoints.map((c: { version: number }) => c.version)).toEqual([1]);
      expect(body.vault.map((n: { content: string }) => n.content)).toEqual(["an honest note"]);
      expect(body.seals).toEqual([]);
      // Withheld: named by shelf and reference (a refused bag name by its sha256), never quoted.
      expect(body.withheld).toEqual([
        { shelf: "locker", ref: `sha256:${sha256(leakedName)}`, rule: expect.any(String) },
        { shelf: "locker", ref: "keys", rule: expect.any(String) },
        { shelf: "checkpoints", ref: "2", rule: expect.any(String) },
        { shelf: "checkpoints", ref: "3", rule: expect.any(String) },
      ]);
      const text = JSON.stringify(body);
      for (const absent of [
        pem,
        "BEGIN PRIVATE KEY",
        leakedName,
        leakedToken,
        token,
        ...codes,
        me.citizen_secret,
        "quietkeyword",
        "lot-07",
        "a public word",
        "innocent content",
      ]) {
        expect(text.includes(absent), absent).toBe(false);
      }
      expect(text).not.toMatch(/city_(sk|st|rc)_/);
      // Nothing is deleted: the withheld rows stay on the shelves.
      expect(await t().db.select().from(lockerBags).where(eq(lockerBags.did, me.did))).toHaveLength(3);
      expect(await t().db.select().from(checkpoints).where(eq(checkpoints.did, me.did))).toHaveLength(3);
    });

    it("exports an away citizen: no bed to release, the census moves its citizens and outside counts only", async () => {
      const me = await admit();
      const auth = { bearer: me.citizen_secret };
      expect((await callDoor(keepLockerBag, { ...auth, body: { bag: "kept", content: "while bound" } })).status).toBe(200);
      expect((await callDoor(liveDoor, { ...auth, body: { action: "leave", wake_on: ["direct_message"] } })).status).toBe(200);
      const before = await census();
      const answer = await callDoor(exportResidency, { ...auth, body: {} });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toMatchObject({ did: me.did, residency_status: "exported", bed_released: null });
      expect(answer.body.locker).toEqual([{ bag: "kept", content: "while bound", bytes: 11, updated_at: expect.any(String) }]);
      const rows = await t().db.select().from(residencyLog).where(eq(residencyLog.did, me.did));
      expect(rows.map((r) => r.event)).toEqual(["admit", "exit", "export"]);
      expect(rows[2]!.details).toMatchObject({ bed_released: null });
      const after = await census();
      expect(after).toMatchObject({ occupancy: before.occupancy, house: before.house, citizens: before.citizens - 1, outside: before.outside - 1 });
      expect((await t().db.select().from(citizens).where(eq(citizens.did, me.did)))[0]).toMatchObject({ residencyStatus: "exported", bedId: null });
      expect(await allPeers()).not.toContain(me.did);
      // The schedule kept on leave wakes nobody: the return is refused as exported, and no bed is given.
      const back = expectProblem(await callDoor(liveDoor, { ...auth, body: { action: "return" } }), 401, "unauthorized");
      expect(back.detail).toMatch(/exported/);
      expect((await census()).occupancy).toBe(before.occupancy);
      expect((await callDoor(verifyResidencyLog)).body.intact).toBe(true);
    });

    it("releases the name and origin: presenting them again admits a new citizen with a new DID", async () => {
      const p = presentation();
      const first = await callDoor(presentGate, { body: p });
      await callDoor(exportResidency, { bearer: first.body.citizen_secret, body: {} });
      const again = await callDoor(presentGate, { body: p });
      expect(again.body).toMatchObject({ verdict: "admitted", resumed: false });
      expect(again.body.did).not.toBe(first.body.did);
      expect(again.body.citizen_secret).not.toBe(first.body.citizen_secret);
      // The old secret does not resume the new citizen.
      expectProblem(await callDoor(readResidency, { bearer: first.body.citizen_secret }), 401, "unauthorized");
    });
  });

  describe("security", () => {
    it("opens nothing with an exported citizen's secret or session tokens: a 401 that says so", async () => {
      const me = await admit();
      const token = (await callDoor(mintToken, { bearer: me.citizen_secret, body: {} })).body.token as string;
      expect((await callDoor(exportResidency, { bearer: me.citizen_secret, body: {} })).status).toBe(200);
      for (const bearer of [me.citizen_secret, token]) {
        for (const [door, body] of [
          [readLocker, undefined],
          [exportResidency, {}],
          [liveDoor, { action: "return" }],
          [writeVault, { content: "x" }],
          [readResidency, undefined],
        ] as const) {
          const problem = expectProblem(await callDoor(door, { bearer, body }), 401, "unauthorized");
          expect(problem.detail).toMatch(/exported/);
        }
      }
      const [row] = await t().db.select().from(citizens).where(eq(citizens.did, me.did));
      expect(row!.residencyStatus).toBe("exported");
      // Every write door of a citizen, whatever the body: the exported secret is refused before anything is read.
      const writes = registry.filter((d) => d.method !== "GET" && d.auth === "citizen");
      expect(writes.length).toBeGreaterThan(15);
      const params = { room: "r", bag: "b", sha256: "0".repeat(64), id: "1" };
      for (const door of writes) {
        const problem = expectProblem(await callDoor(door, { bearer: me.citizen_secret, body: {}, params }), 401, "unauthorized");
        expect(problem.detail, door.name).toMatch(/exported/);
      }
    });

    it("exports once under parallel requests: one export row", async () => {
      const me = await admit();
      const answers = await Promise.all(Array.from({ length: 4 }, () => callDoor(exportResidency, { bearer: me.citizen_secret, body: {} })));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
      for (const a of answers.filter((x) => x.status !== 200)) expect([401, 409]).toContain(a.status);
      const events = (await t().db.select().from(residencyLog).where(eq(residencyLog.did, me.did))).map((r) => r.event);
      expect(events).toEqual(["admit", "export"]);
    });
  });
});
