import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import path from "node:path";
import pg from "pg";
import { freePort } from "./free-port";

export interface BenchServer {
  base: string;
  pid: number;
  stop: () => Promise<void>;
}

/**
 * `next start` of the app's build (or of the build in `dir`, a baseline's or the floor's) on a
 * free port, with `env` over the bench's own environment; resolves once /beacon.json answers.
 * Its own process group, so `stop` ends the server with whatever it started.
 */
export async function startNextServer(options: { env: NodeJS.ProcessEnv; dir?: string | null; cwd?: string; nodeArgs?: string[] }): Promise<BenchServer> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const where = options.dir ? [options.dir] : [];
  const child: ChildProcess = spawn(
    "node",
    [...(options.nodeArgs ?? []), "node_modules/next/dist/bin/next", "start", ...where, "-H", "127.0.0.1", "-p", String(port)],
    {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: {
        ...options.env,
        NODE_ENV: "production",
        NEXT_TELEMETRY_DISABLED: "1",
        CITY_BASE_URL: base,
        // A copy's build is in its own `.next`.
        ...(options.dir ? { CITY_NEXT_DIST_DIR: "" } : {}),
      },
      stdio: ["ignore", "ignore", "inherit"],
      detached: true,
    },
  );
  for (let i = 0; ; i++) {
    try {
      const answer = await fetch(`${base}/beacon.json`);
      await answer.arrayBuffer();
      if (answer.ok) break;
    } catch {
      if (i >= 300 || child.exitCode !== null) throw new Error(`the server at ${base} did not start`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    base,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid!, "SIGTERM");
      await exited;
    },
  };
}

/**
 * A fresh database `name` on the PostgreSQL server at `serverUrl` (dropped first if a run left it),
 * migrated by the migrations of `appDir` (this checkout's, or a baseline's: its schema is its own).
 * `admin` stays connected to the server's own database (for pg_stat_activity); `drop` ends it.
 */
export async function migratedDatabase(
  serverUrl: string,
  name: string,
  appDir = process.cwd(),
): Promise<{ url: string; admin: pg.Client; drop: () => Promise<void> }> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const env = { ...process.env, DATABASE_URL: url.toString(), CITY_DB_DRIVER: "pg" };
  const migrated = spawnSync(path.join(process.cwd(), "node_modules/.bin/tsx"), ["scripts/migrate.ts"], { cwd: appDir, env, stdio: "inherit" });
  if (migrated.status !== 0) throw new Error(`migrating ${name} failed`);
  return {
    url: url.toString(),
    admin,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
