import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { upgradeDatabase } from "@/lib/city/upgrade";
import { type OpenDatabase, openPg, openPglite } from "@/db/client";
import { pgliteLayout as layout, runPgliteTemplate } from "./template-folder";

declare module "vitest" {
  export interface ProvidedContext {
    /** A migrated PGlite data directory, dumped once per run: each suite loads it instead of migrating. */
    pgliteTemplate: string;
    /** A migrated database on TEST_DATABASE_URL's server: each suite is created from it (CREATE DATABASE ... TEMPLATE). */
    serverTemplate: string;
    /** A migrated PGlite folder: each `next start` of the HTTP suites starts on a copy (next-server.ts). */
    pgliteServerTemplate: string;
  }
}

/**
 * A project's global setup: migrates once per run instead of once per suite, driver or server (a
 * fresh PGlite takes seconds to migrate, a dump loads in under one; a server database copied from
 * a template skips its migrations). The domain project gets a PGlite dump its suites load in
 * memory; the HTTP project a PGlite folder its `next start` servers copy (they migrate themselves
 * on first use and find nothing to do). Both get a migrated database on TEST_DATABASE_URL's server.
 */
export default async function migrateTemplatesOnce(project: TestProject): Promise<() => Promise<void>> {
  if (project.name === "http") {
    const made = await makeTemplates("http");
    provideAll(project, made.provided);
    return made.teardown;
  }
  // The two domain projects (domain, domain-shared: vitest.config.mts) share one set, made by the
  // first of their setups in this process and dropped after the last one's teardown.
  const kept = globalThis as { cityDomainTemplates?: { made: Promise<Made>; users: number } };
  kept.cityDomainTemplates ??= { made: makeTemplates("domain"), users: 0 };
  const shared = kept.cityDomainTemplates;
  shared.users += 1;
  const made = await shared.made;
  provideAll(project, made.provided);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    kept.cityDomainTemplates = undefined;
    await made.teardown();
  };
}

type Provided = { pgliteTemplate?: string; serverTemplate?: string; pgliteServerTemplate?: string };
interface Made {
  provided: Provided;
  teardown: () => Promise<void>;
}

function provideAll(project: TestProject, provided: Provided): void {
  for (const [key, value] of Object.entries(provided) as [keyof Provided, string][]) project.provide(key, value);
}

async function makeTemplates(kind: "http" | "domain"): Promise<Made> {
  const pglite = await pgliteTemplates();
  const provided: Provided = { pgliteTemplate: pglite.dump, pgliteServerTemplate: pglite.folder };
  // The shared server is started by the next global setup, in this process (next-server.ts).
  if (kind === "http") process.env.CITY_TEST_PGLITE_TEMPLATE = pglite.folder;

  let dropTemplate = async () => undefined as unknown;
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (serverUrl) {
    const name = `city_template_${process.pid}_${randomBytes(4).toString("hex")}`;
    const admin = await openPg(serverUrl);
    const { sql } = await import("drizzle-orm");
    await admin.db.execute(sql.raw(`CREATE DATABASE ${name}`));
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const template = await openPg(url.toString());
    await upgradeDatabase(template);
    // A template must have no connection open while databases are copied from it.
    await template.close();
    provided.serverTemplate = name;
    dropTemplate = async () => {
      await admin.db.execute(sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      await admin.close();
    };
  }
  return {
    provided,
    teardown: async () => {
      await dropTemplate();
      pglite.remove();
    },
  };
}

/**
 * The run's migrated PGlite, as a folder (each `next start` of the HTTP suites starts on a copy) and
 * as a dump of it (each domain suite loads it in memory), from one migration. `npm test` runs vitest
 * four times (scripts/test.sh): it names one CITY_TEST_TEMPLATES folder for all of them, and the
 * first that needs the templates makes them there for the others (migrating a PGlite cost about
 * 12 CPU-s a run on the slower machine here); the folder goes with the run. Without it (vitest run by
 * hand), each run makes its own and removes it at the end.
 */
async function pgliteTemplates(): Promise<{ folder: string; dump: string; remove: () => void }> {
  const runFolder = process.env.CITY_TEST_TEMPLATES;
  if (!runFolder) {
    const made = mkdtempSync(path.join(os.tmpdir(), "city-template-"));
    await makePglite(layout(made));
    return { ...layout(made), remove: () => rmSync(made, { recursive: true, force: true }) };
  }
  // Made aside, then renamed into place (atomic): a run finds it whole or not at all. Two runs that
  // make it at once both succeed; the second rename fails on the first's folder, and its copy goes.
  const made = runPgliteTemplate(runFolder);
  if (!existsSync(made)) {
    mkdirSync(runFolder, { recursive: true });
    const making = mkdtempSync(path.join(runFolder, "making-"));
    await makePglite(layout(making));
    try {
      renameSync(making, made);
    } catch {
      rmSync(making, { recursive: true, force: true });
    }
  }
  return { ...layout(made), remove: () => undefined };
}

async function makePglite({ folder, dump }: { folder: string; dump: string }): Promise<void> {
  const pglite = await openPglite(folder);
  await upgradeDatabase(pglite);
  await slimForCopies(pglite);
  const tar = await (pglite.db as unknown as { $client: { dumpDataDir: (c: "none") => Promise<Blob> } }).$client.dumpDataDir("none");
  writeFileSync(dump, Buffer.from(await tar.arrayBuffer()));
  await pglite.close();
}

/**
 * A migrated PGlite made cheap to copy, since every suite (and every `next start`) loads one: its
 * two template databases dropped (PGlite never creates a database; 15 of its 43 MB), a buffer pool
 * of 16 MB instead of 128 (a test city is a few MB; the pool is allocated and zeroed at each start),
 * and a checkpoint, so a copy starts without replaying the migrations' WAL. Measured per load on
 * this machine: 0.90 CPU-s before, 0.45 after (with readTemplate's bytes handed over without a Blob).
 */
async function slimForCopies(pglite: OpenDatabase): Promise<void> {
  const { sql } = await import("drizzle-orm");
  for (const statement of [
    "ALTER DATABASE template0 IS_TEMPLATE false",
    "DROP DATABASE template0",
    "ALTER DATABASE template1 IS_TEMPLATE false",
    "DROP DATABASE template1",
    "ALTER SYSTEM SET shared_buffers = '16MB'",
    "CHECKPOINT",
  ])
    await pglite.db.execute(sql.raw(statement));
}
