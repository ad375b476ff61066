/**
 * The framework's floor for a door: a route handler that returns a constant, in the benchmark's
 * own build. The app's source is copied into `.next-bench-floor/` (ignored by git, TypeScript and
 * Prettier like every `.next-*` folder; inside the checkout so the build resolves the checkout's
 * node_modules) with one extra route file, built there and thrown away after the run: the route is
 * never in the app's build. It costs one more `next build`, so only the full bench makes it (CI's
 * smoke run does not).
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

export const FLOOR_PATH = "/bench-floor";
export const FLOOR_DIR = ".next-bench-floor";

/** What is not copied: builds, dependencies, data, reports and git. */
const SKIPPED = new Set(["node_modules", ".git", ".city-data", "test-results", "playwright-report", "reports", ".stryker-tmp", "package-lock.json"]);

const FLOOR_ROUTE = `// The bench's floor (scripts/bench-floor.ts): never part of the app's build.
export const dynamic = "force-dynamic";

export function GET() {
  return Response.json({ floor: true });
}

export async function POST(request: Request) {
  await request.text();
  return Response.json({ floor: true });
}
`;

/** Copies the app with the floor route and builds it; returns the folder to `next start`. */
export function buildFloorApp(root: string): string {
  const dir = path.join(root, FLOOR_DIR);
  rmSync(dir, { recursive: true, force: true });
  for (const entry of readdirSync(root)) {
    if (SKIPPED.has(entry) || entry.startsWith(".next") || entry.endsWith(".tsbuildinfo")) continue;
    cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  }
  mkdirSync(path.join(dir, "app", FLOOR_PATH.slice(1)), { recursive: true });
  writeFileSync(path.join(dir, "app", FLOOR_PATH.slice(1), "route.ts"), FLOOR_ROUTE);
  console.log(`building the floor's throwaway copy of the app in ${FLOOR_DIR}/`);
  const env = { ...process.env, CITY_NEXT_DIST_DIR: "", NEXT_TELEMETRY_DISABLED: "1" };
  const built = spawnSync("node", [path.join(root, "node_modules/next/dist/bin/next"), "build", dir], { stdio: ["ignore", "ignore", "inherit"], env });
  if (built.status !== 0) throw new Error("the floor's build failed");
  return dir;
}

export function removeFloorApp(root: string): void {
  rmSync(path.join(root, FLOOR_DIR), { recursive: true, force: true });
}
