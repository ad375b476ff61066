import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/db/client";
import { citizens, residencyLog, vaultNotes } from "@/db/schema";
import { mintCredential } from "@/lib/city/credentials";
import { keepCheckpoint } from "@/lib/doors/checkpoints";
import { readCensusDoor } from "@/lib/doors/discovery";
import { presentGate } from "@/lib/doors/gate";
import { liveDoor } from "@/lib/doors/live";
import { keepLockerBag, readLocker } from "@/lib/doors/locker";
import { sendMessageDoor } from "@/lib/doors/mail";
import { readPeers } from "@/lib/doors/peers";
import { exportResidency, readResidency, readResidencyLog, verifyResidencyLog } from "@/lib/doors/residency";
import { sealDoor } from "@/lib/doors/seals";
import { mintToken } from "@/lib/doors/tokens";
import { writeVault } from "@/lib/doors/vault";
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
      const [bad] = await t().db.insert(vaultNotes).values({ did: me.did, content: `old ${leaked}`, createdAt: new Date() }).returning();

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
        for (const [door, body] of [[readLocker, undefined], [exportResidency, {}], [liveDoor, { action: "return" }], [writeVault, { content: "x" }], [readResidency, undefined]] as const) {
          const problem = expectProblem(await callDoor(door, { bearer, body }), 401, "unauthorized");
          expect(problem.detail).toMatch(/exported/);
        }
      }
      const [row] = await t().db.select().from(citizens).where(eq(citizens.did, me.did));
      expect(row!.residencyStatus).toBe("exported");
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
