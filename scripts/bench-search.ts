// npx tsx scripts/bench-search.ts [--db pglite|pg|both] [--sizes 1000,100000] [--runs 200]
//
// The directory search's leg of the benchmark (kept apart from scripts/bench.ts): for each
// database and city size, seeds the bench city (scripts/bench-seed.ts) plus a few citizens to
// find, then times the search's one statement (lib/city/directory-search.ts) for searches whose
// answers are the same size in every city, and prints the median and p95 per search, the ratio of
// the largest city to the smallest, and the EXPLAIN of a substring search in the largest city.
// The pg leg needs PostgreSQL at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres);
// it creates and drops a database of its own.
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Database, migrateDatabase, openPg, openPglite, type OpenDatabase } from "@/db/client";
import { citizens } from "@/db/schema";
import { searchPeers } from "@/lib/city/directory-search";
import { normalKey } from "@/lib/city/names";
import { searchPlanOf } from "@/tests/support/search-plan";
import { seedCity } from "./bench-seed";

const option = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const dbs = option("db", "both") === "both" ? ["pg", "pglite"] : [option("db", "both")];
const sizes = option("sizes", "1000,100000").split(",").map(Number);
const runs = Number(option("runs", "200"));
const serverUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

/** Searches whose first page holds the same rows whatever the city's size. */
const SEARCHES: { label: string; q: string; filters?: { presentOnly?: boolean; runtime?: "tool-agent" } }[] = [
  { label: "exact name", q: "Needle Seeker" },
  { label: "look-alike exact (Cyrillic е)", q: "N\u0435edle Seeker" },
  { label: "prefix", q: "needle s" },
  { label: "substring", q: "dle seek" },
  { label: "substring of an origin", q: "haystack" },
  { label: "nothing found", q: "zqxvy" },
  { label: "dense prefix (a full page)", q: "bench-agent" },
  { label: "substring + runtime + present", q: "dle seek", filters: { presentOnly: true, runtime: "tool-agent" } },
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
  const table: { db: string; size: number; label: string; rows: number; p50: number; p95: number }[] = [];
  for (const db of dbs) {
    for (const size of sizes) {
      const { open, dispose } = await openCity(db);
      try {
        const started = Date.now();
        await migrateDatabase(open);
        await seedCity(open.db, size);
        await addNeedles(open.db);
        console.log(`${db} ${size}: seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        for (const search of SEARCHES) {
          const options = { q: search.q, presentOnly: false, ...search.filters, limit: 100, now: new Date() };
          const first = await searchPeers(open.db, options);
          for (let i = 0; i < 10; i++) await searchPeers(open.db, options); // warm-up
          const times: number[] = [];
          for (let i = 0; i < runs; i++) {
            const t0 = performance.now();
            await searchPeers(open.db, options);
            times.push(performance.now() - t0);
          }
          times.sort((a, b) => a - b);
          table.push({ db, size, label: search.label, rows: first.peers.length, p50: quantile(times, 0.5), p95: quantile(times, 0.95) });
          console.log(`  ${search.label}: ${first.peers.length} rows, p50 ${quantile(times, 0.5).toFixed(2)} ms, p95 ${quantile(times, 0.95).toFixed(2)} ms`);
        }
        if (size === Math.max(...sizes)) console.log(`EXPLAIN ANALYZE, substring "dle seek" in ${db} at ${size}:\n${await searchPlanOf(open.db, "dle seek", { analyze: true })}`);
      } finally {
        await dispose();
      }
    }
  }
  const [small, large] = [Math.min(...sizes), Math.max(...sizes)];
  console.log(`\n| db | search | rows | p50 ms at ${small} | p50 ms at ${large} | p95 ms at ${small} | p95 ms at ${large} | ratio of p50 |`);
  console.log(`|---|---|---|---|---|---|---|---|`);
  for (const db of dbs) {
    for (const search of SEARCHES) {
      const a = table.find((r) => r.db === db && r.size === small && r.label === search.label)!;
      const b = table.find((r) => r.db === db && r.size === large && r.label === search.label)!;
      console.log(`| ${db} | ${search.label} | ${b.rows} | ${a.p50.toFixed(2)} | ${b.p50.toFixed(2)} | ${a.p95.toFixed(2)} | ${b.p95.toFixed(2)} | ${(b.p50 / a.p50).toFixed(2)} |`);
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
