import { type ChildProcess, spawn } from "node:child_process";
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
