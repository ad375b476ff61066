import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { LOCKER_BYTES_COUNTER } from "@/lib/city/shelves";
import { normalKey } from "@/lib/city/directory";
import { appendLog, integratePending } from "@/lib/city/logs/residency-log";

/** The residency log rows the bench writes through the domain's own appender (hash-chained). */
export const SEEDED_LOG_ROWS = 2000;

/**
 * A city of `count` citizens written straight into the database (not through the gate): each
 * citizen has 2 locker bags, every citizen sent one message, every fifth wrote a plaza post. The
 * residency log gets one admit row per citizen for the first SEEDED_LOG_ROWS citizens, appended
 * by lib/city/logs/residency-log/append.ts so the chain verifies; beyond that the log is not seeded (the
 * log's first page costs the same whatever its length: keyset on seq).
 */
export async function seedCity(db: Database, count: number): Promise<void> {
  const did = (i: string) => sql.raw(`encode(sha256(convert_to('bench-' || ${i}, 'UTF8')), 'hex')`);
  // The keys in the published normal form, as the gate writes them (digits 0 and 1 reduce to o and l).
  const digits = "0123456789";
  const digitKeys = [...digits].map(normalKey).join("");
  await db.execute(sql`
    INSERT INTO citizens (did, name, runtime, origin, name_key, origin_key, salt, secret_hash, bed_id, bound_at, last_seen_at)
    SELECT ${did("i")}, 'bench-agent-' || i, 'language-model', 'bench.example',
           ${normalKey("bench-agent-")} || translate(i::text, ${digits}, ${digitKeys}), ${normalKey("bench.example")},
           md5('salt' || i), encode(sha256(convert_to('secret-' || i, 'UTF8')), 'hex'), 'bed-' || i,
           date_trunc('milliseconds', now()) - make_interval(secs => ${count} - i), now()
    FROM generate_series(1, ${count}) AS i`);
  await db.execute(sql`
    INSERT INTO locker_bags (did, bag, content, bytes, updated_at)
    SELECT ${did("i")}, 'notes-' || b, repeat('x', 200), 200, now()
    FROM generate_series(1, ${count}) AS i, generate_series(1, 2) AS b`);
  await db.execute(sql`
    INSERT INTO city_counters (name, value) VALUES (${LOCKER_BYTES_COUNTER}, ${count * 2 * 200})
    ON CONFLICT (name) DO UPDATE SET value = city_counters.value + EXCLUDED.value`);
  await db.execute(sql`
    INSERT INTO messages (from_did, to_did, body, created_at)
    SELECT ${did("i")}, ${did("(i % " + count + ") + 1")}, 'hello neighbour ' || i, now()
    FROM generate_series(1, ${count}) AS i`);
  await db.execute(sql`
    INSERT INTO posts (board, room, did, body, created_at)
    SELECT 'plaza', NULL, ${did("i")}, 'a plaza post ' || i, now()
    FROM generate_series(1, ${count}, 5) AS i`);
  const logged = Math.min(count, SEEDED_LOG_ROWS);
  const dids = await db.execute(sql`SELECT ${did("i")} AS did FROM generate_series(1, ${logged}) AS i`);
  const rows = ((dids as { rows?: { did: string }[] }).rows ?? []) as { did: string }[];
  await db.transaction(async (tx) => {
    for (const row of rows) await appendLog(tx as Database, { event: "admit", did: row.did, at: new Date() });
  });
  // Integrated as one batch after the commit (or a few: INTEGRATION_BATCH_MAX entries each).
  while ((await integratePending(db, new Date(), { wait: true })) !== 0);
  await db.execute(sql`ANALYZE`);
}
