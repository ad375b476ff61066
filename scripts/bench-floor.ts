/**
 * The framework's floor for a door: a route handler that returns a constant, in the benchmark's
 * own build. The app's source is copied into `.next-bench-floor/` (ignored by git, TypeScript and
 * Prettier like every `.next-*` folder; inside the checkout so the build resolves the checkout's
 * node_modules) with one extra route file, built there and thrown away after the run: the route is
 * never in the app's build. It costs one more `next build`, so only the full bench makes it (CI's
 * smoke run does not).
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

export const FLOOR_PATH = "/bench-floor";
export const FLOOR_DIR = ".next-bench-floor";
export const BASELINE_DIR = ".next-bench-baseline";

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
  buildIn(root, dir, "the floor's");
  return dir;
}

/**
 * The app as it was at git revision `rev`, built in `.next-bench-baseline/` (ignored like the
 * floor's copy), for `--baseline <rev>`: its legs run beside this checkout's in the same run.
 */
export function buildBaselineApp(root: string, rev: string): string {
  const dir = path.join(root, BASELINE_DIR);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = spawnSync("git", ["archive", "--format=tar", rev], { cwd: root, maxBuffer: 1 << 30 });
  if (archive.status !== 0) throw new Error(`git archive ${rev} failed: ${archive.stderr.toString()}`);
  const unpacked = spawnSync("tar", ["-x", "-C", dir], { input: archive.stdout });
  if (unpacked.status !== 0) throw new Error(`unpacking ${rev} failed`);
  rmSync(path.join(dir, "package-lock.json"), { force: true });
  console.log(`building the baseline ${rev} in ${BASELINE_DIR}/`);
  buildIn(root, dir, "the baseline's");
  writeFileSync(path.join(dir, REV_FILE), rev);
  return dir;
}

/** Beside a baseline's build: the revision it was built from. */
const REV_FILE = ".bench-rev";

/**
 * The baseline's built copy: with `reuse` (--reuse-baseline) the copy a previous run built from the
 * same revision and kept (--keep-baseline), when it is there; else a new build.
 */
export function baselineApp(root: string, rev: string, reuse: boolean): string {
  const dir = path.join(root, BASELINE_DIR);
  const builtRev = path.join(dir, REV_FILE);
  if (reuse && existsSync(path.join(dir, ".next")) && existsSync(builtRev) && readFileSync(builtRev, "utf8") === rev) {
    console.log(`reusing the baseline ${rev} built in ${BASELINE_DIR}/`);
    return dir;
  }
  return buildBaselineApp(root, rev);
}

/** `next build` of a copy inside the checkout (its imports resolve the checkout's node_modules). */
function buildIn(root: string, dir: string, what: string): void {
  const env = { ...process.env, CITY_NEXT_DIST_DIR: "", NEXT_TELEMETRY_DISABLED: "1" };
  const built = spawnSync("node", [path.join(root, "node_modules/next/dist/bin/next"), "build", dir], { stdio: ["ignore", "ignore", "inherit"], env });
  if (built.status !== 0) throw new Error(`${what} build failed`);
}

export function removeCopies(root: string, { keepBaseline = false } = {}): void {
  for (const folder of keepBaseline ? [FLOOR_DIR] : [FLOOR_DIR, BASELINE_DIR]) rmSync(path.join(root, folder), { recursive: true, force: true });
}
