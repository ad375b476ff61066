import { describe, expect, it } from "vitest";
import { presentation } from "../../support/gate";
import { type Answer, describeOnServer, type PostgresCity, usePostgresCity } from "../../support/postgres-city";

/*
 * The citizen's row is the lock of its lifecycle (DESIGN.md section 6): export takes it
 * exclusively and every write for the citizen reads its status under it in the write's own
 * transaction. Raced through real HTTP against the built server on PostgreSQL, through node-postgres
 * and through the Neon driver, several rounds each; after every round the invariants are read back
 * from the database: no exported row holds a bed, the kept census counts (occupancy = house =
 * hotel guests) equal the rows, one live citizen per name and origin, and every acknowledged
 * write is in the export or was refused.
 */

const ROUNDS = 4;

/** The invariants of issue 19, read from the database after a round. */
async function expectInvariants(city: PostgresCity) {
  expect(await city.count("citizens", "residency_status = 'exported' AND bed_id IS NOT NULL"), "exported rows holding a bed").toBe(0);
  const [beds, house] = (await city.psql("SELECT sum(beds) || ',' || sum(house) FROM census_counts")).split(",").map(Number);
  const realBeds = await city.count("citizens", "bed_id IS NOT NULL");
  const realHouse = await city.count("citizens", "residency_status = 'bound' AND bed_id IS NOT NULL");
  // occupancy and hotel guests are both the kept beds count (lib/city/census.ts).
  expect({ beds, house }).toEqual({ beds: realBeds, house: realHouse });
  expect(beds, "occupancy = house = hotel guests").toBe(house);
  expect(
    await city.psql("SELECT count(*) FROM (SELECT name, origin FROM citizens WHERE bed_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) twice"),
    "one bed per name and origin",
  ).toBe("0");
  expect(await city.count("citizens", "bed_id IS NOT NULL AND residency_status <> 'bound'"), "a bed only for the bound").toBe(0);
}

/** A citizen admitted under a name of its own, so the name and origin can be presented again. */
async function admitNamed(city: PostgresCity) {
  const shown = presentation();
  const answer = await city.post("/gate", shown);
  expect(answer.body.verdict, JSON.stringify(answer.body)).toBe("admitted");
  return { ...(answer.body as { did: string; citizen_secret: string }), shown };
}

const refusedAsExported = (a: Answer) => a.status === 401 && /exported/.test(String(a.body.detail));

function exportRaces(driver: "pg" | "neon") {
  describeOnServer(`the built server on PostgreSQL (${driver} driver): export races the citizen's writes`, () => {
    const city = usePostgresCity(`security-postgres-export-${driver}`, driver === "pg" ? { CITY_DB_DRIVER: "pg" } : {});

    it(`never gives an exported citizen a bed: leave, then export and 12 returns at once, ${ROUNDS} rounds`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const citizen = await admitNamed(city());
        expect((await city().post("/api/leave", {}, citizen.citizen_secret)).status).toBe(200);
        const race = await city().race(13, (i) =>
          i === 6 ? city().post("/api/residency/export", {}, citizen.citizen_secret) : city().post("/api/return", {}, citizen.citizen_secret),
        );
        const exported = race.answers[6]!;
        expect(exported.status, JSON.stringify(exported.body)).toBe(200);
        const returns = race.answers.filter((_, i) => i !== 6);
        for (const answer of returns) {
          // A return either ran before the export (bound, and the export released its bed) or
          // after it, refused: never an acknowledged return of an exported citizen.
          if (answer.status === 200) expect(answer.body.residency_status, JSON.stringify(answer.body)).toBe("bound");
          else expect(refusedAsExported(answer), JSON.stringify(answer.body)).toBe(true);
        }
        expect(await city().psql(`SELECT residency_status || ',' || coalesce(bed_id, '-') FROM citizens WHERE did = '${citizen.did}'`)).toBe("exported,-");
        // Every bed handed out by a return is on the log, and the export's release names the last.
        const returned = returns.filter((a) => a.status === 200 && a.body.returned === true);
        expect(await city().count("residency_log", `did = '${citizen.did}' AND event = 'return'`)).toBe(returned.length);
        const lastBed = returned.length
          ? returned
              .map((a) => a.body.bed_id as string)
              .sort()
              .at(-1)!
          : null;
        expect(exported.body.bed_released).toBe(lastBed);
        // The name and origin go free: presented again, a new citizen with one bed.
        const again = await city().post("/gate", citizen.shown);
        expect(again.body.verdict, JSON.stringify(again.body)).toBe("admitted");
        await expectInvariants(city());
      }
    }, 180_000);

    it(`keeps every acknowledged write in the export or refuses it: export and 10 locker and vault writes at once, ${ROUNDS} rounds`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const citizen = await admitNamed(city());
        const race = await city().race(11, (i) => {
          if (i === 5) return city().post("/api/residency/export", {}, citizen.citizen_secret);
          return i < 5
            ? city().post("/api/locker", { bag: `bag-${round}-${i}`, content: `locker ${round} ${i}` }, citizen.citizen_secret)
            : city().post("/api/vault", { content: `vault ${round} ${i}` }, citizen.citizen_secret);
        });
        const exported = race.answers[5]!;
        expect(exported.status, JSON.stringify(exported.body)).toBe(200);
        const bags = new Set((exported.body.locker as { bag: string }[]).map((b) => b.bag));
        const notes = new Set((exported.body.vault as { content: string }[]).map((n) => n.content));
        race.answers.forEach((answer, i) => {
          if (i === 5) return;
          if (answer.status >= 400) return expect(refusedAsExported(answer), JSON.stringify(answer.body)).toBe(true);
          expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
          if (i < 5) expect(bags.has(`bag-${round}-${i}`), `locker write ${i} acknowledged but not exported`).toBe(true);
          else expect(notes.has(`vault ${round} ${i}`), `vault write ${i} acknowledged but not exported`).toBe(true);
        });
        // Nothing landed after the export: the shelves hold exactly what it carried out.
        expect(await city().count("locker_bags", `did = '${citizen.did}'`)).toBe(bags.size);
        expect(await city().count("vault_notes", `did = '${citizen.did}'`)).toBe(notes.size);
        expect(await city().count("quarantine", `did = '${citizen.did}'`)).toBe(0);
        await expectInvariants(city());
      }
    }, 180_000);

    it(`chains the log through one citizen's own leaves, returns, gate resumes and export at once, and admits a name once among 8 presenters, ${ROUNDS} rounds`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [stays, goes] = await Promise.all([admitNamed(city()), admitNamed(city())]);
        const before = Number(await city().psql("SELECT max(seq) FROM residency_log"));
        const send = (i: number) => {
          const who = i % 2 ? goes : stays;
          if (i === 13) return city().post("/api/residency/export", {}, goes.citizen_secret);
          if (i % 3 === 0) return city().post("/api/leave", {}, who.citizen_secret);
          return i % 3 === 1 ? city().post("/api/return", {}, who.citizen_secret) : city().post("/gate", who.shown, who.citizen_secret);
        };
        const race = await city().race(18, send);
        race.answers.forEach((answer, i) => {
          // Only the exported citizen's requests after its export are refused (a gate presentation
          // with its dead credential is a filtered verdict, 200).
          if (answer.status !== 200) expect(i % 2 === 1 && refusedAsExported(answer), `${i}: ${JSON.stringify(answer.body)}`).toBe(true);
        });
        expect(race.answers[13]!.status).toBe(200);
        // Each appended row carries its own receipt: no two appends shared a seq, none was left out
        // (integrated in batches, a receipt's tree is its batch's: at least as large as its seq).
        const receipts = race.answers.flatMap((a) => (a.body.log_receipt ? [a.body.log_receipt as { seq: number; tree_size: number }] : []));
        for (const r of receipts) expect(r.tree_size).toBeGreaterThanOrEqual(r.seq);
        const seqs = receipts.map((r) => r.seq).sort((x, y) => x - y);
        const appended = Number(await city().psql("SELECT max(seq) FROM residency_log")) - before;
        expect(seqs).toEqual(Array.from({ length: appended }, (_, k) => before + 1 + k));
        const rival = presentation();
        const rivals = await city().race(8, () => city().post("/gate", rival));
        expect(rivals.answers.map((a) => a.body.verdict).sort()).toEqual(["admitted", ...Array(7).fill("filtered")]);
        expect(
          await city().psql("SELECT count(*) FROM residency_log l JOIN residency_log p ON p.seq = l.seq - 1 WHERE l.prev_hash <> p.hash OR l.at < p.at"),
        ).toBe("0");
        expect(
          await city().psql(
            "SELECT h.seq = l.seq AND h.hash = l.hash AND h.edge = c.edge FROM log_head h, (SELECT * FROM residency_log ORDER BY seq DESC LIMIT 1) l, log_checkpoints c WHERE c.size = l.seq",
          ),
        ).toBe("t");
        expect((await city().get("/api/residency/log/verify")).body).toMatchObject({ intact: true, rows_checked: before + appended + 1 });
        await expectInvariants(city());
      }
    }, 180_000);
  });
}

exportRaces("pg");
exportRaces("neon");
