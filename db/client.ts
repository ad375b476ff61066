import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgDialect, PgQueryResultHKT, PgSession } from "drizzle-orm/pg-core";
import type { NameKeyReport } from "@/lib/city/names";
import { env } from "@/lib/env";
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

/** Rows of a raw `db.execute` result: PGlite, pg and the Neon pool all answer `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? (result as T[])) as T[];
}

/**
 * `db.execute` for a statement sent on every heartbeat, as a named prepared statement: the server
 * parses it once per connection and each later call sends only its parameters; the server plans
 * it once too while its generic plan is estimated no dearer than a custom one (a value the
 * estimate hangs on is best a subquery: live-delta.ts). Measured on the poll (pg, 2 cores): 1.3 to
 * 1.5 times the polls a second, at 1,000 and at 100,000 citizens (BENCHMARKS.md). The name is a
 * hash of the text, so one name is always one text, and a connection keeps one statement per
 * shape of the caller's SQL: the statement's values must be parameters, never spliced in. Drizzle's own path (its
 * logger counts it), on every driver; PGlite, in this process, ignores the name. A pooler in
 * transaction mode must support protocol-level prepared statements (PgBouncer 1.21 and later with
 * max_prepared_statements, as Neon's); CITY_PREPARED_STATEMENTS=0 sends the statement unnamed.
 */
export function executePrepared(db: Database, statement: SQL): Promise<unknown> {
  if (env().CITY_PREPARED_STATEMENTS === "0") return db.execute(statement);
  const { session, dialect } = db as unknown as { session: PgSession; dialect: PgDialect };
  const query = dialect.sqlToQuery(statement);
  const name = `city_${createHash("sha256").update(query.sql).digest("hex").slice(0, 32)}`;
  return session.prepareQuery(query, undefined, name, false).execute();
}

export const MIGRATIONS_FOLDER = path.join(process.cwd(), "db", "migrations");

/** PGlite in a folder (or `memory://`): the embedded default, nothing to install. */
export async function openPglite(dataDir: string, options: { loadDataDir?: Blob } = {}): Promise<OpenDatabase> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  // pg_trgm backs the directory search's substring index (migration 0018 creates the extension).
  const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm");
  if (!dataDir.startsWith("memory://")) mkdirSync(dataDir, { recursive: true });
  const client = await PGlite.create(dataDir, { ...options, extensions: { pg_trgm } });
  const db = drizzle({ client, schema, logger: drizzleLogger() }) as unknown as Database;
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
export function serverDriverFor(
  connectionString: string,
  settings: { CITY_DB_DRIVER?: "neon" | "pg"; CITY_NEON_WS_PROXY?: string },
): "neon" | "pg" {
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

/** What the data steps after the SQL migrations did (only the name keys report anything yet). */
export interface MigrationReport {
  nameKeys: NameKeyReport;
}

export async function migrateDatabase(open: OpenDatabase): Promise<MigrationReport> {
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
  // Data a SQL migration cannot compute: the published normal form of names (Unicode tables).
  // Two citizens whose names now share a form are reported, never merged (one log line each).
  const { backfillNameKeys } = await import("@/lib/city/names");
  const nameKeys = await backfillNameKeys(open.db);
  const { logLine } = await import("@/lib/log");
  for (const c of nameKeys.collisions) logLine("error", "name form collision: kept apart, the citizen keeps its key of the older form", { did: c.did, held_by: c.heldBy });
  // The residency log's Merkle tree over rows written before it existed (once; nothing when current).
  const { catchUpLogTree } = await import("@/lib/city/log-store");
  await catchUpLogTree(open.db);
  return { nameKeys };
}

export async function openConfiguredDatabase(): Promise<OpenDatabase> {
  const settings = env();
  const url = settings.DATABASE_URL;
  if (!url) return openPglite(path.resolve(settings.CITY_DATA_DIR));
  return serverDriverFor(url, settings) === "neon" ? openNeon(url) : openPg(url);
}

// One database per process, kept on globalThis so that dev-server reloads do not open a second
// PGlite on the same folder (two openers of one folder silently diverge).
const holder = globalThis as typeof globalThis & { __cityDatabase?: Promise<Database> };

/**
 * The process's database. PGlite is migrated on first use; a server database is migrated at deploy
 * time with `npm run db:migrate`, never by a serverless instance on its own.
 */
export function getDb(): Promise<Database> {
  holder.__cityDatabase ??= (async () => {
    const open = await openConfiguredDatabase();
    if (open.driver === "pglite") await migrateDatabase(open);
    return open.db;
  })().catch((err: unknown) => {
    holder.__cityDatabase = undefined;
    throw err;
  });
  return holder.__cityDatabase;
}

/** Lets tests hand the door layer a database of their own. */
export function useDatabase(db: Database): void {
  holder.__cityDatabase = Promise.resolve(db);
}
