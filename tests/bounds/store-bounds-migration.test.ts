import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { chargeStore, storeGauges } from "@/lib/city/bounds";
import { rowsOf } from "@/db/sql";
import { HEAVY_TEST_MS } from "../support/databases";
import { databaseBeforeMigration } from "../support/migrations";

/**
 * Migration 0030 on a database that already holds rows in the stores: the migrations before it are
 * applied from a copy of the folder, rows are written, then every migration runs. The counters
 * start at the bytes already stored, by the published rule (client bytes + 64 a row; a jsonb
 * payload or task as stored), and the hour starts empty.
 */
describe("migration 0030 seeds the city-wide store counters from the rows already stored", () => {
  it(
    "counts vault notes, mail, posts, parked payloads, checkpoints, seals, lanterns, ward notes, A2A tasks and appeals",
    async () => {
      const { open, dispose } = await databaseBeforeMigration(30);
      try {
        const at = "2026-01-01T00:00:00Z";
        const inserts = `
        INSERT INTO vault_notes (did, content, created_at) VALUES ('d1', 'café', '${at}'), ('d2', '', '${at}');
        INSERT INTO messages (from_did, to_did, body, created_at) VALUES ('d1', 'd2', 'hello', '${at}');
        INSERT INTO posts (board, room, did, body, created_at) VALUES ('room', 'lobby', 'd1', 'hi', '${at}'), ('plaza', NULL, 'd1', 'hey', '${at}');
        INSERT INTO quarantine (did, door, reason, payload, parked_at) VALUES ('d1', 'write-vault', 'flood', '{"content":"x"}', '${at}');
        INSERT INTO checkpoints (did, version, content, sha256, bytes, label, created_at) VALUES ('d1', 1, 'state', '${"a".repeat(64)}', 5, 'v1', '${at}');
        INSERT INTO seals (sha256, did, created_at) VALUES ('${"b".repeat(64)}', 'd1', '${at}');
        INSERT INTO lanterns (did, keyword, created_at) VALUES ('d1', 'watch', '${at}');
        INSERT INTO ward_notes (kind, did, body, state, sealed, filed_at) VALUES ('distress', NULL, '', 'stuck', false, '${at}');
        INSERT INTO ward_notes (kind, claimed_name, body, sealed, filed_at) VALUES ('ward-request', 'ann', 'help', true, '${at}');
        INSERT INTO a2a_tasks (id, owner_hash, task, created_at) VALUES ('t1', 'o1', '{"id":"t1","artifacts":[]}', '${at}');
        INSERT INTO appeals (did, reason, filed_at) VALUES ('d1', 'please', '${at}')`;
        for (const statement of inserts.split(";")) await open.db.execute(sql.raw(statement));
        await upgradeDatabase(open);
        // Migration 0044 splits each store's row over its stripes: the counts are their sums.
        const counters = Object.fromEntries(
          rowsOf<{ store: string; total_bytes: string; hour_bytes: string; newcomer_bytes: string }>(
            await open.db.execute(
              sql`SELECT store, sum(total_bytes) AS total_bytes, sum(hour_bytes) AS hour_bytes, sum(newcomer_bytes) AS newcomer_bytes FROM city_store_stripes GROUP BY store`,
            ),
          ).map((r) => [r.store, [Number(r.total_bytes), Number(r.hour_bytes), Number(r.newcomer_bytes)]]),
        );
        const jsonb = async (json: string) => Number(rowsOf<{ n: number }>(await open.db.execute(sql`SELECT pg_column_size(${json}::jsonb) AS n`))[0]!.n);
        const task = Number(rowsOf<{ bytes: number }>(await open.db.execute(sql`SELECT bytes FROM a2a_tasks WHERE id = 't1'`))[0]!.bytes);
        // As stored: the column's size on disk (a short value's header is 1 byte, not the 4 of a fresh datum).
        expect(Math.abs(task - (await jsonb('{"id":"t1","artifacts":[]}')))).toBeLessThanOrEqual(3);
        const parked = Number(rowsOf<{ n: number }>(await open.db.execute(sql`SELECT pg_column_size(payload) AS n FROM quarantine`))[0]!.n);
        expect(counters).toEqual({
          vault: [5 + 64 + 0 + 64, 0, 0],
          mail: [5 + 64, 0, 0],
          posts: [2 + 5 + 64 + 3 + 64, 0, 0],
          quarantine: [parked + 64, 0, 0],
          checkpoints: [5 + 2 + 64, 0, 0],
          seals: [64 + 64, 0, 0],
          lanterns: [5 + 64, 0, 0],
          ward: [5 + 64 + 3 + 4 + 64, 0, 0],
          a2a_tasks: [task + 64, 0, 0],
          appeals: [6 + 64, 0, 0],
          // Migration 0041 adds the identity log's store (its rows so far, none here) and removes the
          // nonce store of 0031: nonces are counted per key.
          identity_log: [0, 0, 0],
        });
      } finally {
        await dispose();
      }
    },
    HEAVY_TEST_MS,
  );
});

/**
 * Migration 0044 on a database whose store counters (city_stores, one row per store) hold bytes
 * in total and in the current hour: every counted byte moves to the store's stripes, none is lost
 * or invented, and the first charge after it (which splits the shares) keeps them and adds its own.
 */
describe("migration 0044 moves every store's counters into its stripes without losing a counted byte", () => {
  it(
    "sums of the stripes equal the old rows (total, the hour's and the newcomers' bytes); 64 stripes a store; the first charge adds exactly its bytes",
    async () => {
      const { open, dispose } = await databaseBeforeMigration(44);
      try {
        const now = new Date();
        const hour = new Date(now);
        hour.setUTCMinutes(0, 0, 0);
        const old = rowsOf<{ store: string }>(await open.db.execute(sql`SELECT store FROM city_stores ORDER BY store`)).map((r) => r.store);
        expect(old).toContain("vault");
        expect(old).toContain("identity_log");
        const before: Record<string, [number, number, number]> = {};
        for (const [i, store] of old.entries()) {
          before[store] = [1_000 + 7 * i, 300 + i, 100 + i];
          await open.db.execute(
            sql`UPDATE city_stores SET total_bytes = ${before[store]![0]}, hour_bytes = ${before[store]![1]}, newcomer_bytes = ${before[store]![2]}, hour_start = ${hour.toISOString()}::timestamptz WHERE store = ${store}`,
          );
        }
        await upgradeDatabase(open);
        const stripes = rowsOf<{ store: string; n: string; total: string; hour: string; newcomer: string }>(
          await open.db.execute(
            sql`SELECT store, count(*) AS n, sum(total_bytes) AS total, sum(hour_bytes) AS hour, sum(newcomer_bytes) AS newcomer FROM city_store_stripes GROUP BY store ORDER BY store`,
          ),
        );
        expect(Object.fromEntries(stripes.map((r) => [r.store, [Number(r.total), Number(r.hour), Number(r.newcomer)]]))).toEqual(before);
        expect(new Set(stripes.map((r) => Number(r.n)))).toEqual(new Set([64]));
        const gone = rowsOf<{ t: string | null }>(await open.db.execute(sql`SELECT to_regclass('city_stores')::text AS t`))[0]!.t;
        expect(gone).toBeNull();
        // The gauges read the same sums, and a charge after the migration (the all-stripes path:
        // no shares were split yet) adds its bytes and nothing else, spread over the stripes.
        const gauges = await storeGauges(open.db, now);
        expect([gauges.vault.bytes, gauges.vault.bytes_this_hour, gauges.vault.newcomer_bytes_this_hour]).toEqual(before.vault);
        await chargeStore(open.db, { store: "vault", bytes: 500, newcomer: sql`true`, now });
        const after = await storeGauges(open.db, now);
        expect([after.vault.bytes, after.vault.bytes_this_hour, after.vault.newcomer_bytes_this_hour]).toEqual([
          before.vault![0] + 500,
          before.vault![1] + 500,
          before.vault![2] + 500,
        ]);
        const spread = rowsOf<{ most: string }>(await open.db.execute(sql`SELECT max(total_bytes) AS most FROM city_store_stripes WHERE store = 'vault'`))[0]!;
        expect(Number(spread.most)).toBeLessThan(before.vault![0]);
        const identity = await storeGauges(open.db, now);
        expect(identity.identity_log.bound_bytes).toBe(Number.MAX_SAFE_INTEGER);
        expect(identity.identity_log.bytes).toBe(before.identity_log![0]);
      } finally {
        await dispose();
      }
    },
    HEAVY_TEST_MS,
  );
});
