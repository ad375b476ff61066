import { asc, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { citizens, identityLog as identityLogRows } from "@/db/schema";
import { useDatabase } from "@/lib/city/database";
import { appendIdentityLog, identityLog, importEarlierKeyFacts } from "@/lib/city/logs/identity-log";
import { jwkThumbprint } from "@/lib/city/keys";
import { publishLogRow } from "@/lib/city/logs/transparency-log";
import { insertCitizenRow } from "../../support/citizens";
import { describeOnDatabases } from "../../support/databases";
import { keyPair } from "../../support/gate";

describeOnDatabases(
  "earlier key facts imported once into the identity log",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const rowsOf = async (did: string) =>
      (await t().db.select().from(identityLogRows).where(eq(identityLogRows.did, did)).orderBy(asc(identityLogRows.seq))).map(publishLogRow);

    it("imports a key bound and a rotation from before the log, saying so with the times the database kept, and only once", async () => {
      const [first, second] = [await keyPair(), await keyPair()];
      const citizen = await insertCitizenRow(t().db, { controllerPublicKey: first.publicKey });
      // A rotation made before the identity log existed (the request_keys trigger of migration 0031 follows it).
      await t().db.update(citizens).set({ controllerPublicKey: second.publicKey }).where(eq(citizens.did, citizen.did));
      // A citizen whose key event is already logged is left alone.
      const logged = await insertCitizenRow(t().db, { controllerPublicKey: (await keyPair()).publicKey });
      await t().db.transaction((tx) => appendIdentityLog(tx as Database, { event: "key-bound", did: logged.did, at: new Date() }));
      const unkeyed = await insertCitizenRow(t().db);

      const imported = await importEarlierKeyFacts(t().db);
      expect(imported).toBe(3);
      const rows = await rowsOf(citizen.did);
      const [firstPrint, secondPrint] = [jwkThumbprint(first.publicKey), jwkThumbprint(second.publicKey)];
      expect(rows.map((r) => [r.event, r.imported, r.thumbprint ?? r.from_thumbprint])).toEqual([
        ["key-bound", true, firstPrint],
        ["key-rotated", true, firstPrint],
        ["key-bound", true, secondPrint],
      ]);
      expect(rows[1]).toMatchObject({ to_thumbprint: secondPrint, rotated_at: rows[2]!.current_since });
      expect(rows[0]).toMatchObject({ public_key: first.publicKey });
      expect(await rowsOf(logged.did)).toHaveLength(1);
      expect(await rowsOf(unkeyed.did)).toHaveLength(0);
      // Never a secret: the rows hold thumbprints, public keys and times only.
      // Each name on its own (expect.not.arrayContaining passed unless all three were there at once).
      for (const row of rows) for (const name of ["secret", "citizen_secret", "signature"]) expect(Object.keys(row), name).not.toContain(name);
      expect(JSON.stringify(rows)).not.toMatch(/city_(sk|st|rc|rt)_/);

      expect(await importEarlierKeyFacts(t().db)).toBe(0);
      expect(await rowsOf(citizen.did)).toHaveLength(3);
      expect(await identityLog.verifyHashChain(t().db, new Date())).toMatchObject({ intact: true });
    });
  },
  { neon: "the import runs in an interactive transaction under the identity log head's lock" },
);
