/**
 * What migration 0026 costs on a city that already has N citizens: the migrations before it, then
 * N citizens with keys of the older normal form (every Kth name carries a soft hyphen or a space,
 * alternately: their keys change; the rest are printable ASCII), then every migration and its
 * data steps as `npm run db:migrate` or the embedded start runs them, and once more (what every
 * later start pays). Statements counted by Drizzle's logger, wall time measured.
 *
 *   npx tsx scripts/bench-name-form.ts [citizens=100000] [K=25]                # PGlite in memory
 *   DATABASE_URL=postgres://.../empty_db npx tsx scripts/bench-name-form.ts  # an empty database
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";

async function main(): Promise<void> {
  process.env.CITY_COUNT_QUERIES = "1";
  const { MIGRATIONS_FOLDER, openConfiguredDatabase, openPglite } = await import("@/db/client");
  const { upgradeDatabase } = await import("@/lib/city/upgrade");
  const { countingQueries } = await import("@/db/query-count");
  const { normalKey } = await import("@/lib/city/directory");
  const count = Number(process.argv[2] ?? 100_000);
  const every = Number(process.argv[3] ?? 25);
  // Never the configured PGlite folder: without DATABASE_URL the city is a PGlite in memory.
  const open = process.env.DATABASE_URL ? await openConfiguredDatabase() : await openPglite("memory://");
  const folder = mkdtempSync(path.join(os.tmpdir(), "city-migrations-"));
  try {
    cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
    const journalPath = path.join(folder, "meta", "_journal.json");
    const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { idx: number }[] };
    journal.entries = journal.entries.filter((e) => e.idx < 26);
    writeFileSync(journalPath, JSON.stringify(journal));
    if (open.driver === "pglite") await (await import("drizzle-orm/pglite/migrator")).migrate(open.db as never, { migrationsFolder: folder });
    else await (await import("drizzle-orm/node-postgres/migrator")).migrate(open.db as never, { migrationsFolder: folder });
    const digits = "0123456789";
    const digitKeys = [...digits].map(normalKey).join("");
    const number = sql`translate(i::text, ${digits}, ${digitKeys})`;
    await open.db.execute(sql`
      INSERT INTO citizens (did, name, runtime, origin, name_key, origin_key, salt, secret_hash, bed_id, bound_at)
      SELECT encode(sha256(convert_to('name-form-' || i, 'UTF8')), 'hex'),
             CASE WHEN i % ${every} <> 0 THEN 'bench-agent-' || i WHEN i % ${2 * every} = 0 THEN 'bench' || chr(173) || '-agent-' || i ELSE 'bench agent-' || i END,
             'language-model', 'bench.example',
             CASE WHEN i % ${every} <> 0 THEN ${normalKey("bench-agent-")} WHEN i % ${2 * every} = 0 THEN 'bench' || chr(173) || '-agent-' ELSE 'bench agent-' END || ${number},
             ${normalKey("bench.example")}, md5('salt' || i), encode(sha256(convert_to('secret-' || i, 'UTF8')), 'hex'), 'bed-' || i,
             now() - make_interval(secs => ${count} - i)
      FROM generate_series(1, ${count}) AS i`);
    for (const run of ["migration 0026 and its backfill", "the next run (nothing stale)"]) {
      const started = performance.now();
      const { value, queries } = await countingQueries(() => upgradeDatabase(open));
      const ms = performance.now() - started;
      const { recomputed, unchanged, collisions } = value.nameKeys;
      console.log(
        `${open.driver}, ${count} citizens (every ${every} changes), ${run}: ${recomputed} recomputed, ${unchanged} unchanged, ${collisions.length} collisions; ${queries} statements, ${ms.toFixed(0)} ms`,
      );
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
    await open.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
