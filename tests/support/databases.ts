import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, inject, it } from "vitest";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { openNeon, openPg, openPglite, type Database, type OpenDatabase } from "@/db/client";
import { forgetLogIdentity } from "@/lib/city/logs/residency-log";
import { forgetSigningKey } from "@/lib/city/signing";
import { startNeonRelay } from "./neon-relay";

export type DriverName = "pglite" | "neon" | "pg";

export interface TestDatabase {
  driver: DriverName;
  db: Database;
  /** Runs SQL as the database owner (for tampering tests and set-up only). */
  raw: (sql: string) => Promise<unknown>;
  /**
   * Opens another handle on the same database: on PostgreSQL a second Neon pool, which is what a
   * second serverless instance is. Null on PGlite (one in-memory database, one handle).
   */
  openAnotherInstance: () => Promise<{ db: Database; close: () => Promise<void> } | null>;
}

/**
 * The drivers a suite runs on. PGlite always. With TEST_DATABASE_URL, the same server through
 * node-postgres for every suite (every race meets real PostgreSQL), and through the Neon driver
 * only for a suite that declares why (`neon: "..."` in describeOnDatabases). The rule: the Neon
 * leg is for what differs between the two drivers, not for what the city does on top of them:
 * - transactions and locks taken through the driver (interactive transactions over the WebSocket,
 *   row locks held across round trips, parallel writes through one pool),
 * - errors: how the driver fails and how a failure is told apart from a refusal (outages, cut
 *   connections, the relay's error events),
 * - the values the driver hands back (text, bytes, numbers, timestamps parsed by each driver),
 * - the relay and a second serverless instance (Neon pools that share one database).
 * Any other suite asserts nothing of the driver that node-postgres does not already exercise.
 */
export function testDrivers(options: { neon?: string } = {}): DriverName[] {
  if (!process.env.TEST_DATABASE_URL) return ["pglite"];
  return options.neon ? ["pglite", "neon", "pg"] : ["pglite", "pg"];
}

let relay: Awaited<ReturnType<typeof startNeonRelay>> | undefined;

async function configureNeonDriver(): Promise<void> {
  const { neonConfig } = await import("@neondatabase/serverless");
  const ws = (await import("ws")).default;
  if (!relay) {
    relay = await startNeonRelay();
    // Closed when the file ends (tests/support/setup.ts), which does not import this module.
    (globalThis as { cityCloseRelay?: () => Promise<void> }).cityCloseRelay = closeRelay;
  }
  const port = relay.port;
  neonConfig.webSocketConstructor = ws;
  neonConfig.wsProxy = (host, hostPort) => `127.0.0.1:${port}/v1?address=${host}:${hostPort}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.pipelineTLS = false;
  neonConfig.pipelineConnect = false;
}

/**
 * A fresh, migrated database for one suite: PGlite in memory, or a new database created on the
 * TEST_DATABASE_URL server and reached through the Neon driver or node-postgres, each copied from
 * the run's migrated template when there is one (tests/support/database-template.ts). Dropped
 * when the suite ends.
 */
export async function createTestDatabase(driver: DriverName): Promise<TestDatabase & { dispose: () => Promise<void> }> {
  if (driver === "pglite") {
    const template = inject("pgliteTemplate");
    const open = await openPglite("memory://", template ? { loadDataDir: templateTar(template) } : {});
    // A copy of this run's migrated template has nothing to migrate (the check costs half a second).
    if (!template) await upgradeDatabase(open);
    return { driver, db: open.db, raw: (sql) => rawOn(open, sql), openAnotherInstance: async () => null, dispose: open.close };
  }
  if (driver === "neon") await configureNeonDriver();
  const openServer = driver === "neon" ? openNeon : openPg;
  const serverUrl = new URL(process.env.TEST_DATABASE_URL!);
  const name = `city_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  const admin = await openServer(serverUrl.toString());
  const template = inject("serverTemplate");
  await rawOn(admin, template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const open = await openServer(url.toString());
  if (!template) await upgradeDatabase(open);
  const others: OpenDatabase[] = [];
  return {
    driver,
    db: open.db,
    raw: (sql) => rawOn(open, sql),
    openAnotherInstance: async () => {
      // A second instance is a Neon pool whatever this leg's driver: the relay is started if needed.
      await configureNeonDriver();
      const other = await openNeon(url.toString());
      others.push(other);
      return { db: other.db, close: other.close };
    },
    dispose: async () => {
      // A pool whose connections a fault test ended may never finish closing: it gets a few
      // seconds, then DROP ... WITH (FORCE) ends whatever is left.
      const closeWithin = (close: () => Promise<void>) =>
        Promise.race([close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
      for (const other of others.splice(0)) await closeWithin(other.close);
      await closeWithin(open.close);
      await rawOn(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    },
  };
}

/**
 * The template's tar as PGlite reads a dump (it asks only for `arrayBuffer()` and `type`), read
 * once per worker: a Blob of the 28 MB would be copied, then read back in chunks, at each load
 * (0.3 CPU-s a suite, measured).
 */
function templateTar(file: string): Blob {
  const cache = globalThis as { cityTemplateTar?: { file: string; bytes: Buffer } };
  if (cache.cityTemplateTar?.file !== file) cache.cityTemplateTar = { file, bytes: readFileSync(file) };
  const { bytes } = cache.cityTemplateTar;
  return { type: "application/x-tar", arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) } as unknown as Blob;
}

async function rawOn(open: OpenDatabase, statement: string): Promise<unknown> {
  const { sql } = await import("drizzle-orm");
  return open.db.execute(sql.raw(statement));
}

/**
 * Runs the same suite once per driver, each on its own fresh database:
 * `describeOnDatabases("locker", (t) => { it("...", async () => { await t().db... }) })`.
 * Tests run in random order (the run's seed is printed; vitest.config.mts); a suite that is one
 * story told in steps (each test building on the city the previous ones left) says why in
 * `ordered`, and keeps its order. `neon` says why the suite also runs on the Neon driver
 * (testDrivers has the rule).
 */
export function describeOnDatabases(name: string, suite: (current: () => TestDatabase) => void, options: { ordered?: string; neon?: string } = {}): void {
  describeMissingServer(name);
  for (const driver of testDrivers(options)) {
    describe(`${name} [${driver}]`, { shuffle: options.ordered === undefined }, () => {
      let handle: (TestDatabase & { dispose: () => Promise<void> }) | undefined;
      beforeAll(async () => {
        handle = await createTestDatabase(driver);
        // A new database is a new city: what this process learnt of the last one's signing key and
        // log identity (kept per instance, as one instance has one database) does not carry over.
        forgetSigningKey();
        forgetLogIdentity();
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

/**
 * PGlite runs one transaction at a time, so only the PostgreSQL leg really races. Its absence is
 * shown in the report as a skipped suite named for it, and in CI (CI=true) it is a failure: CI must
 * race. One rule for the in-process suites and the built server's (describeOnServer).
 */
export function describeMissingServer(name: string): void {
  if (process.env.TEST_DATABASE_URL) return;
  if (process.env.CI === "true") {
    describe(`${name} [PostgreSQL]`, () => {
      it("needs TEST_DATABASE_URL in CI: without PostgreSQL no parallel test really races", () => {
        throw new Error("TEST_DATABASE_URL is not set; CI runs every database suite on PostgreSQL too.");
      });
    });
    return;
  }
  describe.skip(`${name} [PostgreSQL] skipped: TEST_DATABASE_URL not set`, () => {
    it("runs this suite on PostgreSQL (node-postgres, and the Neon driver where the suite says why)", () => undefined);
  });
}

export async function closeRelay(): Promise<void> {
  await relay?.close();
  relay = undefined;
}

/**
 * Edits a table the way only its owner can: with the append-only triggers switched off for the
 * moment. That switches off the version triggers too, so the edit is announced as an owner must
 * (README, "Versioned reads"): every city_versions row moves on, and the held pages are rebuilt.
 */
export async function asOwner(database: TestDatabase, table: string, statement: string): Promise<void> {
  await database.raw(`ALTER TABLE ${table} DISABLE TRIGGER USER`);
  try {
    await database.raw(statement);
  } finally {
    await database.raw(`ALTER TABLE ${table} ENABLE TRIGGER USER`);
    await database.raw(`UPDATE city_versions SET version = version + 1`);
  }
}

export { HEAVY_TEST_MS } from "./limits";
