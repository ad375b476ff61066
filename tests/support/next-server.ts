import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../scripts/free-port";
import { inject } from "vitest";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    /** Where the run's shared servers are asked for (shared-servers.ts). */
    serverBroker: string;
    /** A file every `next start` of the run adds a line to, counted at the end. */
    serverTally: string;
  }
}

/**
 * Starts the real production server (`next start`) on a fresh PGlite folder for the HTTP tests,
 * and the broker of the servers files share by environment (shared-servers.ts). The build must
 * exist: `npm test` runs `next build` first. At the end, how many servers the run started.
 */
export default async function startNextServer(project: TestProject): Promise<() => Promise<void>> {
  const tallyFolder = mkdtempSync(path.join(os.tmpdir(), "city-servers-"));
  const tally = path.join(tallyFolder, "started");
  process.env.CITY_TEST_SERVER_TALLY = tally;
  project.provide("serverTally", tally);
  const server = await startCityServer();
  project.provide("baseUrl", server.baseUrl);
  const broker = await startServerBroker();
  project.provide("serverBroker", broker.url);
  return async () => {
    await broker.stop();
    await server.stop();
    const lines = existsSync(tally) ? readFileSync(tally, "utf8").split("\n").filter(Boolean) : [];
    const shared = lines.filter((line) => line === "shared").length;
    console.log(`next start servers started in this run: ${lines.length} (${shared} shared by environment, tests/support/shared-servers.ts)`);
    rmSync(tallyFolder, { recursive: true, force: true });
  };
}

export interface CityServer {
  baseUrl: string;
  /** The PGlite folder the server keeps its records in (still there after stop, until removed). */
  dataDir: string;
  /** Everything the server wrote to stdout and stderr so far. */
  output: () => string;
  /** Stops the server; the data folder is removed unless keepData. */
  stop: (options?: { keepData?: boolean }) => Promise<void>;
}

/**
 * How long a `next start` may take to answer its first request: boots of 29 s were seen on this
 * 2-core machine under a full run, so the wait is three times that, and the hooks that boot a
 * server get the boot and a margin (BOOT_HOOK_TIMEOUT_MS).
 */
export const BOOT_DEADLINE_MS = 90_000;
export const BOOT_HOOK_TIMEOUT_MS = BOOT_DEADLINE_MS + 60_000;

/**
 * A `next start` of the build on a fresh PGlite folder, with extra environment when given. The
 * port is one the system picked free a moment before; another process can take it in between, so
 * a server that exits with EADDRINUSE is started again on another port (up to three times).
 */
export async function startCityServer(extraEnv: Record<string, string> = {}, tallied: "own" | "shared" = "own"): Promise<CityServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      const server = await startOnce(extraEnv);
      const tally = tallyFile();
      if (tally) appendFileSync(tally, `${tallied}\n`);
      return server;
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === 3) throw error;
    }
  }
}

class PortTaken extends Error {}

/** The key of an environment: the same variables with the same values, in any order. */
function keyOf(env: Record<string, string>): string {
  return JSON.stringify(Object.entries(env).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The broker of the servers files share by environment (shared-servers.ts, useSharedServer), in the
 * global setup's process: POST a JSON environment, get {baseUrl} of its server, started by the first
 * request for it; every one stops when the run ends.
 */
export async function startServerBroker(): Promise<{ url: string; stop: () => Promise<void> }> {
  const servers = new Map<string, Promise<CityServer>>();
  const broker = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      const env = JSON.parse(body || "{}") as Record<string, string>;
      const key = keyOf(env);
      if (!servers.has(key)) servers.set(key, startCityServer(env, "shared"));
      servers.get(key)!.then(
        (server) => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ baseUrl: server.baseUrl })),
        (error: unknown) => response.writeHead(500).end(String(error)),
      );
    });
  });
  // A boot may take longer than node's default request timeout under a full run.
  broker.requestTimeout = 0;
  await new Promise<void>((resolve) => broker.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(broker.address() as AddressInfo).port}`,
    stop: async () => {
      await new Promise((resolve) => broker.close(resolve));
      const started = await Promise.allSettled(servers.values());
      await Promise.all(started.map((result) => (result.status === "fulfilled" ? result.value.stop() : undefined)));
    },
  };
}

/** The run's tally file: in a test file by inject, in the global setup by environment. */
function tallyFile(): string | undefined {
  if (process.env.CITY_TEST_SERVER_TALLY) return process.env.CITY_TEST_SERVER_TALLY;
  try {
    return inject("serverTally");
  } catch {
    return undefined;
  }
}

/**
 * The run's migrated PGlite folder (database-template.ts), when there is one: a server started on a
 * copy skips its migrations. In a test file it comes by inject; in the global setup, by environment.
 */
function migratedFolder(): string | undefined {
  if (process.env.CITY_TEST_PGLITE_TEMPLATE) return process.env.CITY_TEST_PGLITE_TEMPLATE;
  try {
    return inject("pgliteServerTemplate");
  } catch {
    return undefined;
  }
}

async function startOnce(extraEnv: Record<string, string>): Promise<CityServer> {
  const root = path.resolve(__dirname, "..", "..");
  if (!existsSync(path.join(root, process.env.CITY_NEXT_DIST_DIR || ".next", "BUILD_ID"))) {
    throw new Error("No production build found: run `npm run build` first (`npm test` does it for you).");
  }
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "city-http-"));
  // Only a server on PGlite opens its data folder: one given a DATABASE_URL (PostgreSQL, most of the
  // HTTP suites' servers) never reads the copy (669 files: a third of a CPU-s of the runner's to
  // make, more to remove).
  const template = extraEnv.DATABASE_URL ? undefined : migratedFolder();
  if (template) cpSync(template, dataDir, { recursive: true });
  const baseUrl = `http://127.0.0.1:${port}`;
  const server: ChildProcess = spawn(
    process.execPath,
    [path.join(root, "node_modules", "next", "dist", "bin", "next"), "start", "-H", "127.0.0.1", "-p", String(port)],
    {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: "",
        CITY_DATA_DIR: dataDir,
        CITY_BASE_URL: baseUrl,
        CITY_CONTACT: "operator@city.test",
        // Every HTTP test comes from 127.0.0.1; the address limit has tests of its own.
        CITY_GATE_PER_ADDRESS_PER_HOUR: "1000",
        // ... so every citizen is of one network (127.0.0.0/24): the shares per network (migrations
        // 0053, 0055) have tests of their own (security-postgres-floods sets them).
        CITY_STORE_NEWCOMER_NETWORK_PERCENT: "100",
        CITY_STORE_NETWORK_PERCENT: "100",
        NEXT_TELEMETRY_DISABLED: "1",
        ...extraEnv,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  server.stdout?.on("data", (chunk) => (output += chunk));
  server.stderr?.on("data", (chunk) => (output += chunk));

  const deadline = Date.now() + BOOT_DEADLINE_MS;
  for (;;) {
    if (server.exitCode !== null) {
      rmSync(dataDir, { recursive: true, force: true });
      if (output.includes("EADDRINUSE")) throw new PortTaken(`port ${port} was taken before next start bound it`);
      throw new Error(`next start exited early:\n${output}`);
    }
    try {
      const response = await fetch(`${baseUrl}/beacon.json`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      server.kill("SIGTERM");
      throw new Error(`next start did not answer within ${BOOT_DEADLINE_MS / 1000} s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    baseUrl,
    dataDir,
    output: () => output,
    stop: async (options = {}) => {
      if (server.exitCode === null) {
        const exited = new Promise((resolve) => server.once("exit", resolve));
        server.kill("SIGTERM");
        await exited;
      }
      if (!options.keepData) rmSync(dataDir, { recursive: true, force: true });
      if (process.env.CITY_TEST_SERVER_LOG) console.log(output);
    },
  };
}
