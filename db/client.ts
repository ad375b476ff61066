import { mkdirSync } from "node:fs";
import path from "node:path";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { env } from "@/lib/env";
import { withPreparedStatements } from "./pglite-prepared";
import { queryCounter } from "./query-count";
import * as schema from "./schema";

/**
 * The one database type every domain module takes. A transaction handle is a Database too, so a
 * domain function never cares whether it runs inside the door's transaction or not.
 */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

export type DriverName = "pglite" | "neon" | "pg";

export interface OpenDatabase {
  db: Database;
  driver: DriverName;
  close: () => Promise<void>;
}

export const MIGRATIONS_FOLDER = path.join(process.cwd(), "db", "migrations");

/**
 * How a new PGlite folder is made (initdb; a folder keeps what it was made with): WAL segments of
 * 1 MB instead of PostgreSQL's 16. Each copy of a migrated PGlite carries its current segment, and
 * in memory (`memory://`, each domain suite's copy) a file is one JavaScript array grown an eighth
 * at a time, so a new 16 MB segment, filled with zeros before use, was copied some twenty times.
 * Measured on the domain suites on PGlite alone (three runs each, alternated): 175 to 193 CPU-s
 * against 198 to 241; a migrated copy 18.8 MB against 28.3 (docs/testing.md).
 */
export const PGLITE_INITDB = ["--wal-segsize=1"];

/** PGlite in a folder (or `memory://`): the embedded default, nothing to install. */
export async function openPglite(dataDir: string, options: { loadDataDir?: Blob } = {}): Promise<OpenDatabase> {
  const { PGlite, protocol, parse } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  // pg_trgm backs the directory search's substring index (migration 0018 creates the extension).
  const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm");
  if (!dataDir.startsWith("memory://")) mkdirSync(dataDir, { recursive: true });
  const client = await PGlite.create(dataDir, { ...options, extensions: { pg_trgm }, initDbStartParams: PGLITE_INITDB });
  const db = drizzle({ client: withPreparedStatements(client, { protocol, parse }), schema, logger: drizzleLogger() }) as unknown as Database;
  return { db, driver: "pglite", close: () => client.close() };
}

/** Neon's serverless driver: a Pool over WebSocket, so interactive transactions work. */
export async function openNeon(connectionString: string): Promise<OpenDatabase> {
  const { Pool, neonConfig } = await import("@neondatabase/serverless");
  const { drizzle } = await import("drizzle-orm/neon-serverless");
  if (!neonConfig.webSocketConstructor && typeof WebSocket === "undefined") {
    neonConfig.webSocketConstructor = (await import("ws")).default;
  }
  const relay = env().CITY_NEON_WS_PROXY;
  if (relay) {
    // Test only: a local WebSocket-to-TCP relay stands in for Neon's proxy (scripts/neon-relay.ts).
    neonConfig.wsProxy = (host, port) => relay.replace("{host}", host).replace("{port}", String(port));
    neonConfig.useSecureWebSocket = false;
    neonConfig.pipelineTLS = false;
    neonConfig.pipelineConnect = false;
  }
  const pool = new Pool({ connectionString, max: 10 });
  return pooled("neon", pool, drizzle({ client: pool, schema, logger: drizzleLogger() }) as unknown as Database);
}

type PoolError = Error & { code?: string };
interface ErrorEmitter {
  on(event: "error", listener: (err: PoolError) => void): unknown;
}

/**
 * A pool-backed database whose clients losing their sockets never take the process down: the pool
 * re-emits an idle client's error, but a client checked out for a transaction emits its own (a
 * backend ended between two statements), and an error event with no listener ends the process.
 * The transaction's next statement then fails as an outage (503) instead.
 */
function pooled(
  driver: "neon" | "pg",
  pool: ErrorEmitter & { on(event: "connect", listener: (client: ErrorEmitter) => void): unknown; end: () => Promise<void> },
  db: Database,
): OpenDatabase {
  let closing = false;
  const report = (err: PoolError) => {
    if (!closing) console.error(`database connection error${err.code ? ` (${err.code})` : ""}`);
  };
  pool.on("error", report);
  pool.on("connect", (client) => client.on("error", report));
  return {
    db,
    driver,
    close: () => {
      closing = true;
      return pool.end();
    },
  };
}

/** node-postgres: any PostgreSQL reachable over TCP (self-hosted, RDS, Cloud SQL, Supabase...). */
export async function openPg(connectionString: string): Promise<OpenDatabase> {
  const { Pool } = (await import("pg")).default;
  const { drizzle } = await import("drizzle-orm/node-postgres");
  const pool = new Pool({ connectionString, max: 10 });
  return pooled("pg", pool, drizzle({ client: pool, schema, logger: drizzleLogger() }) as unknown as Database);
}

function drizzleLogger(): typeof queryCounter | undefined {
  return env().CITY_COUNT_QUERIES === "1" ? queryCounter : undefined;
}

/**
 * Which driver reaches a DATABASE_URL: CITY_DB_DRIVER when set; else Neon's serverless driver for
 * a Neon host (`*.neon.tech`, `*.neon.build`) or when CITY_NEON_WS_PROXY names a relay standing in
 * for Neon's proxy; else node-postgres.
 */
export function serverDriverFor(connectionString: string, settings: { CITY_DB_DRIVER?: "neon" | "pg"; CITY_NEON_WS_PROXY?: string }): "neon" | "pg" {
  if (settings.CITY_DB_DRIVER) return settings.CITY_DB_DRIVER;
  if (settings.CITY_NEON_WS_PROXY) return "neon";
  let host = "";
  try {
    host = new URL(connectionString).hostname.toLowerCase();
  } catch {
    return "pg";
  }
  return /(^|\.)neon\.(tech|build)$/.test(host) ? "neon" : "pg";
}

/**
 * The SQL migrations (db/migrations), on any driver. Data steps a SQL migration cannot compute
 * belong to the domain and run after these: lib/city/upgrade.ts.
 */
export async function migrateDatabase(open: OpenDatabase): Promise<void> {
  const config = { migrationsFolder: MIGRATIONS_FOLDER };
  if (open.driver === "pglite") {
    const { migrate } = await import("drizzle-orm/pglite/migrator");
    await migrate(open.db as never, config);
  } else if (open.driver === "pg") {
    const { migrate } = await import("drizzle-orm/node-postgres/migrator");
    await migrate(open.db as never, config);
  } else {
    const { migrate } = await import("drizzle-orm/neon-serverless/migrator");
    await migrate(open.db as never, config);
  }
}

export async function openConfiguredDatabase(): Promise<OpenDatabase> {
  const settings = env();
  const url = settings.DATABASE_URL;
  if (!url) return openPglite(path.resolve(settings.CITY_DATA_DIR));
  return serverDriverFor(url, settings) === "neon" ? openNeon(url) : openPg(url);
}
