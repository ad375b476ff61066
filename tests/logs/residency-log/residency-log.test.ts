import { count, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { logVerifiedHead, residencyLog } from "@/db/schema";
import { verifyHashChain } from "@/lib/city/logs/residency-log";
import { verifyResidencyLog } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { asOwner as asOwnerOf, describeOnDatabases } from "../../support/databases";
import { admit, callDoor } from "../../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

describeOnDatabases(
  "the residency log's remembered verified head",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const head = async () => (await t().db.select().from(logVerifiedHead))[0];
    const rows = async () => (await t().db.select({ n: count() }).from(residencyLog))[0]!.n;

    const asOwner = (statement: string) => asOwnerOf(t(), "residency_log", statement);

    it("remembers the head after an intact verification and moves it forward with new rows", async () => {
      for (let i = 0; i < 3; i++) await admit();
      const first = await callDoor(verifyResidencyLog);
      expect(first.body).toMatchObject({ intact: true, rows_checked: 3 });
      expect(await head()).toMatchObject({ seq: 3, hash: first.body.head_hash });
      for (let i = 0; i < 2; i++) await admit();
      const second = await callDoor(verifyResidencyLog);
      expect(second.body).toMatchObject({ intact: true, rows_checked: 5 });
      expect(await head()).toMatchObject({ seq: 5, hash: second.body.head_hash });
    });

    it("hashes only the rows after the head plus one audit page per call, and the rotating audit still finds an owner's edit", async () => {
      for (let i = 0; i < 2; i++) await admit();
      expect(await rows()).toBe(7);
      expect((await verifyHashChain(t().db, new Date(), 2)).intact).toBe(true);
      // That call hashed the new rows 6-7 and audited one page (rows 1-2) of the remembered ones.
      expect(await head()).toMatchObject({ seq: 7, auditAfter: 2 });
      // An owner edits row 6, before the head. The next call audits rows 3-4 only, and they hold...
      await asOwner(`UPDATE residency_log SET details = jsonb_set(details, '{name}', '"forged"') WHERE seq = 6`);
      expect((await verifyHashChain(t().db, new Date(), 2)).intact).toBe(true);
      expect(await head()).toMatchObject({ seq: 7, auditAfter: 4 });
      // ...and the call after it audits rows 5-6 and names row 6.
      expect(await verifyHashChain(t().db, new Date(), 2)).toMatchObject({ intact: false, rows_checked: 5, first_broken: { seq: 6 } });
    });

    it("reports the head row itself missing or changed at once", async () => {
      const at = (await head())!.seq;
      await asOwner(`UPDATE residency_log SET hash = '${"f".repeat(64)}' WHERE seq = ${at}`);
      const { body } = await callDoor(verifyResidencyLog);
      expect(body).toMatchObject({ intact: false, first_broken: { seq: at } });
      expect((await t().db.select().from(residencyLog).where(eq(residencyLog.seq, at)))[0]!.hash).toBe("f".repeat(64));
    });
  },
  { ordered: "the verified head moves forward test by test over one growing log, tampered last" },
);
