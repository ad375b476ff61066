import { sql } from "drizzle-orm";
import { migrateDatabase, openPg, rowsOf } from "@/db/client";
import { encodePollCursor, pollStatement } from "@/lib/city/live";
import { seedCity } from "./bench-seed";
async function main() {
  const name = `city_tmp_plan_${process.pid}`;
  const admin = await openPg("postgres://postgres@127.0.0.1:5432/postgres");
  await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
  const open = await openPg(`postgres://postgres@127.0.0.1:5432/${name}`);
  try {
    await migrateDatabase(open);
    await seedCity(open.db, 1000);
    const [{ me }] = rowsOf<{ me: string }>(await open.db.execute(sql`SELECT encode(sha256(convert_to('bench-1', 'UTF8')), 'hex') AS me`)) as [{ me: string }];
    await open.db.execute(sql`INSERT INTO lanterns (did, keyword, created_at) VALUES (${me}, 'moonlit', now() - interval '30 days')`);
    await open.db.execute(sql`INSERT INTO posts (board, room, did, body, created_at) SELECT 'room', 'room-' || (i % 100), md5(i::text), 'old ' || i, now() - interval '40 days' + make_interval(secs => i * 9) FROM generate_series(1, 300000) i`);
    await open.db.execute(sql`VACUUM ANALYZE`);
    const { statement } = pollStatement(me, { cursor: encodePollCursor(new Date(Date.now() - 60_000)), schedule: null }, new Date());
    const { dialect } = open.db as any;
    const q = dialect.sqlToQuery(statement);
    const lit = (v: unknown) => (v === null ? "NULL" : typeof v === "number" ? String(v) : `'${String(v).replace(/'/g, "''")}'`);
    await open.db.transaction(async (tx) => {
      await tx.execute(sql.raw(`SET LOCAL plan_cache_mode = force_generic_plan`));
      await tx.execute(sql.raw(`PREPARE p AS ${q.sql}`));
      const rows = rowsOf<Record<string, string>>(await tx.execute(sql.raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE p(${q.params.map(lit).join(", ")})`)));
      console.log(rows.map((r) => Object.values(r)[0]).join("\n"));
      throw new Error("rollback");
    }).catch(() => undefined);
  } finally {
    await open.close();
    await admin.db.execute(sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    await admin.close();
  }
}
main();
