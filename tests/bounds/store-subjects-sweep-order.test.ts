import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { describeOnDatabases } from "../support/databases";

/*
 * The store charge's sweeps of stale subject rows (visitors' `src:` rows, migration 0052; newcomers'
 * networks' `net:` rows, migration 0053) take other subjects' rows. Taken before the writer's own
 * rows, two writers of two sources at the hour's turn (when every row of the last hour is stale) can
 * each hold the other's row for deletion and wait for their own: a deadlock PostgreSQL breaks by
 * aborting one (40P01). Since migration 0054 a writer holds its own rows first and sweeps last, with
 * SKIP LOCKED, so it never waits while holding another's row.
 *
 * The oracle is the lock order itself, with no timing: source B's writer is played by a transaction
 * that holds A's row (as B's sweep would) and then asks for B's row, while A's writer waits for its own.
 */
const ALL = sql`1000000000::bigint`;
const charge = (subject: string, network: string | null) =>
  sql`SELECT city_store_charge_share('vault', ${subject}::text, ${network}::text, 100::bigint, true, date_trunc('hour', now()), 0,
    ${ALL}, ${ALL}, ${ALL}, ${ALL}, ${ALL}, ${ALL}, ${ALL}) AS ok`;

describeOnDatabases("the store charge's sweep order at the hour's turn", (t) => {
  for (const [kind, a, b, subjectOf, networkOf] of [
    ["newcomers' networks (net:)", "net:198.51.100.0/24", "net:203.0.113.0/24", (n: string) => `did:${n}`, (n: string) => n],
    ["visitor sources (src:)", "src:198.51.100.0/24", "src:203.0.113.0/24", (n: string) => n, () => null],
  ] as const) {
    it(`two writers of two ${kind} never deadlock: a writer holds its own rows before it sweeps another's`, async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite runs one transaction at a time: no two writers meet");
      await t().raw(
        `DELETE FROM city_store_subjects WHERE store = 'vault'; INSERT INTO city_store_subjects (store, subject, hour_start, hour_bytes, total_bytes) VALUES ('vault', '${a}', date_trunc('hour', now()) - interval '1 hour', 100, 100), ('vault', '${b}', date_trunc('hour', now()) - interval '1 hour', 100, 100)`,
      );
      let writerA: Promise<unknown> | undefined;
      await t().db.transaction(async (tx) => {
        // B's writer, as its sweep would: A's stale row first.
        await tx.execute(sql`SELECT 1 FROM city_store_subjects WHERE store = 'vault' AND subject = ${a} FOR UPDATE`);
        // Settled once (a drizzle query runs again at every then()), its failure kept for the end.
        writerA = (async () => t().db.execute(charge(subjectOf(a), networkOf(a))))();
        writerA.catch(() => undefined);
        // A's writer is waiting for a row lock (its own row, held here) before B's writer goes on.
        for (let i = 0; ; i++) {
          const [w] = rowsOf<{ n: number | string }>(
            await t().db.execute(
              sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%city_store_charge_share%'`,
            ),
          );
          if (Number(w!.n) > 0) break;
          expect(i, "A's writer never waited for its row").toBeLessThan(2_000);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        // Then its own row: free, since A's writer has taken no other row than its own yet.
        await tx.execute(sql`SELECT 1 FROM city_store_subjects WHERE store = 'vault' AND subject = ${b} FOR UPDATE`);
      });
      const [done] = rowsOf<{ ok: boolean }>((await writerA!) as never);
      expect(done!.ok).toBe(true);
    });
  }
});
