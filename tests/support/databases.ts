import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe } from "vitest";
import { migrateDatabase, openNeon, openPg, openPglite, type Database, type OpenDatabase } from "@/db/client";
import { startNeonRelay } from "./neon-relay";

export type DriverName = "pglite" | "neon" | "pg";

export interface TestDatabase {
  driver: DriverName;
  db: Database;
  /** Runs SQL as the database owner (for tampering tests and set-up only). */
  raw: (sql: string) => Promise<unknown>;
}

/**
 * The drivers this run covers: PGlite always; with TEST_DATABASE_URL set, the same server through
 * the Neon driver (via the relay) and through node-postgres.
 */
export function testDrivers(): DriverName[] {
  return process.env.TEST_DATABASE_URL ? ["pglite", "neon", "pg"] : ["pglite"];
}

let relay: Awaited<ReturnType<typeof startNeonRelay>> | undefined;

async function configureNeonDriver(): Promise<void> {
  const { neonConfig } = await import("@neondatabase/serverless");
  const ws = (await import("ws")).default;
  relay ??= await startNeonRelay();
  const port = relay.port;
  neonConfig.webSocketConstructor = ws;
  neonConfig.wsProxy = (host, hostPort) => `127.0.0.1:${port}/v1?address=${host}:${hostPort}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.pipelineTLS = false;
  neonConfig.pipelineConnect = false;
}

/**
 * A fresh, migrated database for one suite: PGlite in memory, or a new database created on the
 * TEST_DATABASE_URL server and reached through the Neon driver or node-postgres. Dropped when the
 * suite ends.
 */
export async function createTestDatabase(driver: DriverName): Promise<TestDatabase & { dispose: () => Promise<void> }> {
  if (driver === "pglite") {
    const open = await openPglite("memory://");
    await migrateDatabase(open);
    return { driver, db: open.db, raw: (sql) => rawOn(open, sql), dispose: open.close };
  }
  if (driver === "neon") await configureNeonDriver();
  const openServer = driver === "neon" ? openNeon : openPg;
  const serverUrl = new URL(process.env.TEST_DATABASE_URL!);
  const name = `city_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  const admin = await openServer(serverUrl.toString());
  await rawOn(admin, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const open = await openServer(url.toString());
  await migrateDatabase(open);
  return {
    driver,
    db: open.db,
    raw: (sql) => rawOn(open, sql),
    dispose: async () => {
      await open.close();
      await rawOn(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    },
  };
}

async function rawOn(open: OpenDatabase, statement: string): Promise<unknown> {
  const { sql } = await import("drizzle-orm");
  return open.db.execute(sql.raw(statement));
}

/**
 * Runs the same suite once per driver, each on its own fresh database:
 * `describeOnDatabases("locker", (t) => { it("...", async () => { await t().db... }) })`.
 */
export function describeOnDatabases(name: string, suite: (current: () => TestDatabase) => void): void {
  for (const driver of testDrivers()) {
    describe(`${name} [${driver}]`, () => {
      let handle: (TestDatabase & { dispose: () => Promise<void> }) | undefined;
      beforeAll(async () => {
        handle = await createTestDatabase(driver);
      }, 60_000);
      afterAll(async () => {
        await handle?.dispose();
      }, 60_000);
      suite(() => {
        if (!handle) throw new Error(`the ${driver} test database is not ready`);
        return handle;
      });
    });
  }
}

export async function closeRelay(): Promise<void> {
  await relay?.close();
  relay = undefined;
}
