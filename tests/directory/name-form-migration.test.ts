import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPg, openPglite, type OpenDatabase } from "@/db/client";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { rowsOf } from "@/db/sql";
import { hashCredential, mintCredential } from "@/lib/city/keys";
import { backfillNameKeys, searchPeers } from "@/lib/city/directory";
import { presentAtGate } from "@/lib/city/gate";
import type { Presentation } from "@/lib/city/challenge";
import { testDrivers } from "../support/databases";
import { migrateTo, migrationsBefore } from "../support/migrations";

/**
 * Migration 0026 on a database that already holds citizens: the SQL migrations up to the one before
 * it are applied from a copy of the folder, rows are written as the old normal form (form 1: NFKC
 * and the confusables table, nothing removed) stored them, then every migration and its data steps
 * run as `npm run db:migrate` runs them. Nobody is merged and nobody lost; a collision is reported.
 */
const FIRST_OF_THIS_FORM = 26;

/** A fresh, empty database of the driver (not the run's migrated template). */
async function emptyDatabase(driver: "pglite" | "pg"): Promise<{ open: OpenDatabase; dispose: () => Promise<void> }> {
  if (driver === "pglite") {
    const open = await openPglite("memory://");
    return { open, dispose: open.close };
  }
  const serverUrl = new URL(process.env.TEST_DATABASE_URL!);
  const name = `city_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  const admin = await openPg(serverUrl.toString());
  await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const open = await openPg(url.toString());
  return {
    open,
    dispose: async () => {
      await open.close();
      await admin.db.execute(sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      await admin.close();
    },
  };
}

/**
 * The city before the migration. Keys are literals as form 1 wrote them (NFKC keeps the soft
 * hyphen, the word joiner and the variation selector, and turns U+3164 into U+1160; m is rn).
 */
const BEFORE = [
  { id: "alice", name: "Ali\u00ADce", origin: "one.example", keys: ["ali\u00adce", "one.exarnple"], minutesAgo: 10 },
  { id: "bob", name: "Bob", origin: "two.example", keys: ["bob", "two.exarnple"], minutesAgo: 9 },
  { id: "carolOlder", name: "Carol\u2060", origin: "two.example", keys: ["carol\u2060", "two.exarnple"], minutesAgo: 8 },
  { id: "carolYounger", name: "Carol", origin: "two.example", keys: ["carol", "two.exarnple"], minutesAgo: 7 },
  { id: "daveOlder", name: "Dave\u00AD", origin: "three.example", keys: ["dave\u00ad", "three.exarnple"], minutesAgo: 6 },
  { id: "daveYounger", name: "Dave\u3164", origin: "three.example", keys: ["dave\u1160", "three.exarnple"], minutesAgo: 5 },
  { id: "aliceExported", name: "Ali\u2060ce", origin: "one.example", keys: ["ali\u2060ce", "one.exarnple"], minutesAgo: 4, exported: true },
  { id: "eve", name: "Eve\uFE0F", origin: "four.example", keys: [null, null], minutesAgo: 3 },
  { id: "frank", name: "Frank Lee", origin: "five.example", keys: ["frank lee", "five.exarnple"], minutesAgo: 2 },
  { id: "bobby", name: "\uFF22\uFF4F\uFF42\uFF42\uFF59", origin: "six.example", keys: ["bobby", "six.exarnple"], minutesAgo: 1 },
] as const;

type Id = (typeof BEFORE)[number]["id"];

/** The keys after the migration, as literals (name_key, origin_key, name_form). */
const AFTER: Record<Id, [string | null, string | null, number]> = {
  alice: ["alice", "one.exarnple", 2],
  bob: ["bob", "two.exarnple", 2],
  carolOlder: ["carol\u2060", "two.exarnple", 1], // collides with carolYounger, who held "carol": keeps its key
  carolYounger: ["carol", "two.exarnple", 2],
  daveOlder: ["dave", "three.exarnple", 2],
  daveYounger: ["dave\u1160", "three.exarnple", 1], // collides with daveOlder, who took "dave" first
  aliceExported: ["alice", "one.exarnple", 2], // exported: holds nothing, shares freely
  eve: ["eve", "four.exarnple", 2],
  frank: ["franklee", "five.exarnple", 2],
  bobby: ["bobby", "six.exarnple", 2], // full-width letters: a candidate whose key stays
};

for (const driver of testDrivers().filter((d): d is "pglite" | "pg" => d !== "neon")) {
  describe(`migration 0026: the name keys of a city that already has citizens [${driver}]`, { shuffle: false }, () => {
    let database: Awaited<ReturnType<typeof emptyDatabase>>;
    const dids = {} as Record<Id, string>;
    const secrets = {} as Record<Id, string>;
    const beds = {} as Record<Id, string>;
    const now = Date.now();

    beforeAll(async () => {
      database = await emptyDatabase(driver);
      const before = migrationsBefore(FIRST_OF_THIS_FORM);
      try {
        await migrateTo(database.open, before.folder);
      } finally {
        before.remove();
      }
      for (const row of BEFORE) {
        dids[row.id] = randomBytes(32).toString("hex");
        secrets[row.id] = mintCredential("secret");
        beds[row.id] = `bed-${randomBytes(4).toString("hex")}`;
        const exported = "exported" in row && row.exported;
        await database.open.db.execute(sql`
          INSERT INTO citizens (did, name, runtime, origin, name_key, origin_key, salt, secret_hash, residency_status, bed_id, bound_at, last_seen_at)
          VALUES (${dids[row.id]}, ${row.name}, 'language-model', ${row.origin}, ${row.keys[0]}, ${row.keys[1]}, ${randomBytes(32).toString("hex")},
                  ${hashCredential(secrets[row.id])}, ${exported ? "exported" : "bound"}, ${exported ? null : beds[row.id]},
                  ${new Date(now - row.minutesAgo * 60_000).toISOString()}::timestamptz, now())`);
      }
    }, 120_000);
    afterAll(async () => database?.dispose(), 60_000);

    const rows = async () =>
      rowsOf<{ did: string; name: string; origin: string; bed_id: string | null; name_key: string | null; origin_key: string | null; name_form: number }>(
        await database.open.db.execute(sql`SELECT did, name, origin, bed_id, name_key, origin_key, name_form FROM citizens ORDER BY bound_at`),
      );
    const idOf = (did: string) => (Object.keys(dids) as Id[]).find((id) => dids[id] === did);

    it("recomputes the keys of every row in the new form, keeps every citizen, and reports each collision without merging", async () => {
      const { nameKeys } = await upgradeDatabase(database.open);
      expect(nameKeys.collisions.map((c) => [idOf(c.did), idOf(c.heldBy)])).toEqual([
        ["carolOlder", "carolYounger"],
        ["daveYounger", "daveOlder"],
      ]);
      // Bob and Carol are printable ASCII without a space: the migration left them in form 2 (their
      // keys cannot change); the full-width Bobby was read and kept its key.
      expect(nameKeys).toMatchObject({ recomputed: 5, unchanged: 1 });
      const after = await rows();
      // Nobody lost: the same ten citizens, each with its name, origin and bed as before.
      expect(after.map((r) => [idOf(r.did), r.name, r.origin, r.bed_id])).toEqual(
        BEFORE.map((b) => [b.id, b.name, b.origin, "exported" in b && b.exported ? null : beds[b.id]]),
      );
      expect(Object.fromEntries(after.map((r) => [idOf(r.did), [r.name_key, r.origin_key, Number(r.name_form)]]))).toEqual(AFTER);
    });

    it("reports the same collisions at the next run, and changes nothing else", async () => {
      const report = await backfillNameKeys(database.open.db);
      expect(report.collisions.map((c) => [idOf(c.did), idOf(c.heldBy)])).toEqual([
        ["carolOlder", "carolYounger"],
        ["daveYounger", "daveOlder"],
      ]);
      expect(report).toMatchObject({ recomputed: 0, unchanged: 0 });
    });

    const present = (name: string, origin: string, caller: Id | null) =>
      database.open.db.transaction((tx) =>
        presentAtGate(tx as never, { name, origin, runtime: "language-model", statement: "back home", ask: "bed", kind: "agent" } as Presentation, {
          now: new Date(),
          ip: null,
          callerDid: caller ? dids[caller] : null,
          credential: caller ? "secret" : null,
          credentialRejected: false,
          limits: { perOriginPerHour: 100_000, perAddressPerHour: 0, admissionsPerHour: 0 },
        }),
      );

    it("lets each of two colliding citizens resume by its own exact name and secret, and holds both against newcomers", async () => {
      // Both colliding citizens were seen since (every authenticated call updates last_seen_at): their
      // rows now lie after the ones holding their form, so a scan meets the holder first.
      await database.open.db.execute(sql`UPDATE citizens SET last_seen_at = now() WHERE did IN (${dids.carolOlder}, ${dids.daveYounger})`);
      for (const [id, name, origin] of [
        ["carolOlder", "Carol\u2060", "two.example"],
        ["carolYounger", "Carol", "two.example"],
        ["daveYounger", "Dave\u3164", "three.example"],
        ["daveOlder", "Dave\u00AD", "three.example"],
      ] as const) {
        expect(await present(name, origin, id), `${id} by ${JSON.stringify(name)}`).toMatchObject({ verdict: "admitted", resumed: true, did: dids[id] });
      }
      for (const [name, origin] of [
        ["Carol\u00AD", "two.example"],
        ["C\u034Farol", "two.example"],
        ["Dave", "three.example"],
        ["Ali\u2062ce", "one.example"],
        ["Frank  Lee", "five.example"],
        ["E\u2800ve", "four.example"],
      ] as const) {
        expect(await present(name, origin, null), JSON.stringify(name)).toMatchObject({ verdict: "filtered", rule: "held" });
      }
    });

    it("finds the recomputed citizens by the plain name, exported ones never", async () => {
      const search = (q: string) => searchPeers(database.open.db, { q, presentOnly: false, limit: 50, now: new Date() });
      expect((await search("Alice")).peers.map((p) => p.name)).toEqual(["Ali\u00ADce"]);
      expect((await search("frank lee")).peers.map((p) => p.name)).toEqual(["Frank Lee"]);
      expect((await search("eve")).peers.map((p) => p.name)).toEqual(["Eve\uFE0F"]);
      expect((await search("dave")).peers.map((p) => p.name)).toEqual(["Dave\u00AD", "Dave\u3164"]);
    });

    it("gives a colliding citizen the current form once the one holding it has left", async () => {
      await database.open.db.execute(sql`UPDATE citizens SET residency_status = 'exported', bed_id = NULL WHERE did = ${dids.carolYounger}`);
      const report = await backfillNameKeys(database.open.db);
      expect(report.collisions.map((c) => idOf(c.did))).toEqual(["daveYounger"]);
      expect(report.recomputed).toBe(1);
      const carol = (await rows()).find((r) => r.did === dids.carolOlder)!;
      expect([carol.name_key, carol.origin_key, Number(carol.name_form)]).toEqual(["carol", "two.exarnple", 2]);
    });
  });
}
