// npx tsx scripts/bench-log.ts [rows...]: the residency log's transparency costs on PostgreSQL
// (DATABASE_URL or postgres://postgres@127.0.0.1:5432/postgres; a scratch database is created and
// dropped). For each log length: an append with its checkpoint (statements and time), an inclusion
// proof, a consistency proof, a full hash tile and a full entry bundle. BENCHMARKS.md keeps the figures.
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { openPg } from "@/db/client";
import { countingQueries } from "@/db/query-count";
import { residencyLog } from "@/db/schema";
import { canonicalJson, sha256Hex } from "@/lib/city/canonical";
import { appendNow, catchUpTree, consistencyProof, GENESIS_HASH, inclusionProof, logSigner, readEntryBundle, readTile } from "@/lib/city/logs/residency-log";

process.env.CITY_COUNT_QUERIES = "1";
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);

async function timed<T>(runs: number, work: (i: number) => Promise<T>): Promise<{ medianMs: number; p95Ms: number; statements: number }> {
  const times: number[] = [];
  let statements = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const { queries } = await countingQueries(() => work(i));
    times.push(performance.now() - started);
    statements = Math.max(statements, queries);
  }
  times.sort((a, b) => a - b);
  return { medianMs: round(times[Math.floor(runs / 2)]!), p95Ms: round(times[Math.floor(runs * 0.95)]!), statements };
}
const round = (n: number) => Math.round(n * 100) / 100;

async function main(): Promise<void> {
  for (const rows of sizes.length ? sizes : [1000, 100000]) {
    const name = `bench_log_${randomBytes(6).toString("hex")}`;
    const admin = await openPg(server);
    await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
    const url = new URL(server);
    url.pathname = `/${name}`;
    const open = await openPg(url.toString());
    try {
      await upgradeDatabase(open);
      const db = open.db;
      // Seed: a valid hash chain written in bulk, then the tree built over it by the catch-up path.
      let prev = GENESIS_HASH;
      const start = Date.UTC(2026, 0, 1);
      for (let from = 1; from <= rows; from += 1000) {
        const batch = [];
        for (let seq = from; seq < Math.min(from + 1000, rows + 1); seq++) {
          const at = new Date(start + seq * 1000);
          const details = { name: `bench-${seq}`, runtime: "language-model", origin: "bench.example", bed_id: `bed-${seq}` };
          const did = sha256Hex(`bench-${seq}`);
          const hash = sha256Hex(canonicalJson({ seq, event: "admit", did, at: at.toISOString(), ...details, prev_hash: prev }));
          batch.push({ seq, event: "admit" as const, did, at, details, prevHash: prev, hash });
          prev = hash;
        }
        await db.insert(residencyLog).values(batch);
      }
      const signer = await logSigner(db);
      const built = performance.now();
      await db.transaction((tx) => catchUpTree(tx as never, signer, rows, new Date()));
      const catchUpMs = round(performance.now() - built);
      // An append as a write makes it: its pending entry in a transaction, then its integration and receipt.
      const append = await timed(50, (i) =>
        appendNow(db, { event: "exit", did: sha256Hex(`bench-${i}`), at: new Date(), details: { bed_released: `bed-${i}` } }),
      );
      // The same machine at the same moment: a transaction of as many trivial statements (BEGIN, lock, two SELECTs, COMMIT).
      const baseline = await timed(50, () =>
        db.transaction(async (tx) => {
          await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended('bench_log_baseline', 0))`);
          await tx.execute(sql`SELECT 1`);
          await tx.execute(sql`SELECT 1`);
        }),
      );
      const size = rows + 50;
      const proof = await timed(100, (i) => inclusionProof(db, 1 + ((i * 7919) % size)));
      const consistency = await timed(100, (i) => consistencyProof(db, 1 + ((i * 7919) % (size - 1)), size));
      const fullTiles = Math.floor(size / 256);
      const tile = await timed(50, (i) => readTile(db, 0, (i * 31) % fullTiles, 256));
      const entries = await timed(50, (i) => readEntryBundle(db, (i * 31) % fullTiles, 256));
      console.log(JSON.stringify({ rows, catchUpMs, append, baseline, proof, consistency, tile, entries }));
    } finally {
      await open.close();
      await admin.db.execute(sql.raw(`DROP DATABASE ${name} WITH (FORCE)`));
      await admin.close();
    }
  }
}

void main();
