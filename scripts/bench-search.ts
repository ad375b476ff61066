// npx tsx scripts/bench-search.ts [--db pglite|pg|both] [--sizes 1000,100000] [--runs 200] [--explain]
//
// The directory search's leg of the benchmark (kept apart from scripts/bench.ts): for each
// database, seeds one bench city per size (scripts/bench-seed.ts) plus a few citizens to find,
// keeps them all open, and times the search's one statement (lib/city/directory/directory-search.ts) with
// the runs of every size interleaved (so a noisy machine weighs on each size alike), for searches
// whose answers are the same size in every city. Prints per search the median and p95, what the
// statement reads (rows of citizens and buffers, from EXPLAIN ANALYZE: the same on a busy machine
// as on a quiet one), and the ratios of the largest city to the smallest; with --explain, every
// plan. The pg leg needs PostgreSQL at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres);
// it creates and drops databases of its own.
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Database, openPg, openPglite, type OpenDatabase } from "@/db/client";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { citizens } from "@/db/schema";
import { searchPeers, normalKey } from "@/lib/city/directory";
import { searchPlanOf, searchReadsOf } from "@/tests/support/search-plan";
import { seedCity } from "./bench-seed";

const option = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const dbs = option("db", "both") === "both" ? ["pg", "pglite"] : [option("db", "both")];
const sizes = option("sizes", "1000,100000").split(",").map(Number);
const runs = Number(option("runs", "200"));
const explain = process.argv.includes("--explain");
const serverUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

type Filters = { presentOnly?: boolean; runtime?: "tool-agent"; provenOnly?: boolean };
/** Searches whose page holds the same rows whatever the city's size (`page: 2`: the page after the first's cursor). */
const SEARCHES: { label: string; q: string; filters?: Filters; limit?: number; page?: 2 }[] = [
  { label: "exact name", q: "Needle Seeker" },
  { label: "look-alike exact (Cyrillic е)", q: "N\u0435edle Seeker" },
  { label: "dense exact (every bench origin)", q: "bench.example" },
  { label: "sparse prefix", q: "needle s" },
  { label: "sparse prefix, page 2 (limit 1)", q: "needle s", limit: 1, page: 2 },
  { label: "dense prefix `bench-agent`", q: "bench-agent" },
  { label: "dense prefix, page 2", q: "bench-agent", page: 2 },
  { label: "dense prefix + present=1", q: "bench-agent", filters: { presentOnly: true } },
  { label: "dense prefix + runtime=tool-agent (none)", q: "bench-agent", filters: { runtime: "tool-agent" } },
  { label: "dense prefix + proven=1 (none)", q: "bench-agent", filters: { provenOnly: true } },
  { label: "substring", q: "dle seek" },
  { label: "substring of an origin", q: "haystack" },
  { label: "dense substring `agent`", q: "agent" },
  { label: "substring + runtime + present", q: "dle seek", filters: { presentOnly: true, runtime: "tool-agent" } },
  { label: "nothing found", q: "zqxvy" },
];

async function openCity(db: string): Promise<{ open: OpenDatabase; dispose: () => Promise<void> }> {
  if (db === "pglite") {
    const open = await openPglite("memory://");
    return { open, dispose: open.close };
  }
  const admin = await openPg(serverUrl);
  const name = `city_bench_search_${randomBytes(4).toString("hex")}`;
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

async function addNeedles(db: Database): Promise<void> {
  const needles = [
    { name: "Needle Seeker", origin: "needles.example", runtime: "tool-agent" as const },
    { name: "needle sewer", origin: "haystack.example", runtime: "language-model" as const },
    { name: "the middle seeker", origin: "far.example", runtime: "tool-agent" as const },
  ];
  for (const n of needles) {
    await db.insert(citizens).values({
      did: randomBytes(32).toString("hex"),
      ...n,
      nameKey: normalKey(n.name),
      originKey: normalKey(n.origin),
      salt: randomBytes(16).toString("hex"),
      secretHash: randomBytes(32).toString("hex"),
      bedId: `needle-${randomBytes(4).toString("hex")}`,
      boundAt: new Date(),
      lastSeenAt: new Date(),
    });
  }
  await db.execute(sql`ANALYZE citizens`);
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function main(): Promise<void> {
  const table: { db: string; size: number; label: string; rows: number; p50: number; p95: number; read: number; buffers: number }[] = [];
  for (const db of dbs) {
    const cities: { size: number; open: OpenDatabase; dispose: () => Promise<void> }[] = [];
    try {
      for (const size of sizes) {
        const city = await openCity(db);
        cities.push({ size, ...city });
        const started = Date.now();
        await upgradeDatabase(city.open);
        await seedCity(city.open.db, size);
        await addNeedles(city.open.db);
        console.log(`${db} ${size}: seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      }
      for (const search of SEARCHES) {
        const prepared = [];
        for (const { size, open } of cities) {
          const options = { q: search.q, presentOnly: false, ...search.filters, limit: search.limit ?? 100, now: new Date() };
          const cursor = search.page === 2 ? ((await searchPeers(open.db, options)).nextCursor ?? undefined) : undefined;
          const withCursor = { ...options, cursor };
          const first = await searchPeers(open.db, withCursor);
          for (let i = 0; i < 10; i++) await searchPeers(open.db, withCursor); // warm-up
          const reads = await searchReadsOf(open.db, search.q, withCursor);
          if (explain)
            console.log(`EXPLAIN ANALYZE ${db} ${size} ${search.label}:\n${await searchPlanOf(open.db, search.q, { ...withCursor, analyze: true })}`);
          prepared.push({ size, open, options: withCursor, rows: first.peers.length, reads, times: [] as number[] });
        }
        for (let i = 0; i < runs; i++) {
          for (const city of prepared) {
            const t0 = performance.now();
            await searchPeers(city.open.db, city.options);
            city.times.push(performance.now() - t0);
          }
        }
        for (const city of prepared) {
          const times = city.times.sort((a, b) => a - b);
          const row = {
            db,
            size: city.size,
            label: search.label,
            rows: city.rows,
            p50: quantile(times, 0.5),
            p95: quantile(times, 0.95),
            read: city.reads.rows,
            buffers: city.reads.buffers,
          };
          table.push(row);
          console.log(
            `  ${db} ${city.size} ${search.label}: ${row.rows} rows, p50 ${row.p50.toFixed(2)} ms, p95 ${row.p95.toFixed(2)} ms, reads ${row.read} rows / ${row.buffers} buffers`,
          );
        }
      }
    } finally {
      for (const city of cities) await city.dispose();
    }
  }
  const [small, large] = [Math.min(...sizes), Math.max(...sizes)];
  console.log(
    `\n| db | search | rows | p50 ms at ${small} | p50 ms at ${large} | ratio of p50 | ratio of p95 | rows read at ${small} / ${large} | buffers at ${small} / ${large} |`,
  );
  console.log(`|---|---|---|---|---|---|---|---|---|`);
  for (const db of dbs) {
    for (const search of SEARCHES) {
      const a = table.find((r) => r.db === db && r.size === small && r.label === search.label)!;
      const b = table.find((r) => r.db === db && r.size === large && r.label === search.label)!;
      console.log(
        `| ${db} | ${search.label} | ${b.rows} | ${a.p50.toFixed(2)} | ${b.p50.toFixed(2)} | ${(b.p50 / a.p50).toFixed(2)} | ${(b.p95 / a.p95).toFixed(2)} | ${a.read} / ${b.read} | ${a.buffers} / ${b.buffers} |`,
      );
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
