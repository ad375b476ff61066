import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens } from "@/db/schema";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { keepLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { exportResidency } from "@/lib/doors/declarations/residency/residency";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { watchTransactionConnections } from "../support/one-connection";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

// A transaction is one connection: statements sent side by side on it queue anyway, and nested
// savepoints among them are fragile. The write doors send them one at a time.
describeOnDatabases(
  "one statement at a time on a transaction's connection",
  (t) => {
    let watch: ReturnType<typeof watchTransactionConnections>;
    beforeAll(() => {
      useDatabase(t().db);
      watch = watchTransactionConnections();
    });
    afterAll(() => watch.restore());
    beforeEach(() => watch.reset());

    it("sees two statements sent at once on one transaction (the watch can fail)", async () => {
      await t().db.transaction(async (tx) => {
        await Promise.all([tx.select().from(citizens).limit(1), tx.select().from(citizens).limit(1)]);
      });
      expect(watch.overlaps()).toBeGreaterThan(0);
    });

    it("a return, by /api/live and by the gate, sends its census read, nonce and delta one at a time", async () => {
      const me = await admit();
      await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "notes", content: "kept" } });
      expect((await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "leave" } })).status).toBe(200);
      watch.reset();
      const back = await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } });
      expect(back.status, JSON.stringify(back.body)).toBe(200);
      expect(back.body.delta.locker_bags).toBe(1);
      const poll = await callDoor(presentGate, { bearer: me.citizen_secret, body: { action: "return", cursor: back.body.cursor } });
      expect(poll.status, JSON.stringify(poll.body)).toBe(200);
      expect(watch.overlaps()).toBe(0);
    });

    it("an export reads the citizen's shelves one at a time", async () => {
      const me = await admit();
      await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "notes", content: "kept" } });
      watch.reset();
      const out = await callDoor(exportResidency, { bearer: me.citizen_secret, body: {} });
      expect(out.status, JSON.stringify(out.body)).toBe(200);
      expect(watch.overlaps()).toBe(0);
    });
  },
  { neon: "transactions: statements on one transaction's connection through each driver" },
);
