import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/*
 * The security figures of a run (SECURITY.md, "Figures of the last run"). Test files run in
 * parallel workers, so none of them edits a shared file: each writer owns one fragment file under
 * reports/security-figures/, and the run's global teardown (tests/support/figures-run.ts) sums the
 * fragments into reports/security-figures.json. Not test-results/: Playwright empties that folder
 * when it starts, after the vitest projects ran.
 */
export const FIGURES_DIR = path.join(process.cwd(), "reports", "security-figures");
export const TOTALS_FILE = path.join(process.cwd(), "reports", "security-figures.json");

/** Figures that describe the registry rather than count work: every fragment says the same, so they are not summed. */
const SAME_IN_EVERY_FRAGMENT = new Set(["doors_covered"]);

/**
 * Records this writer's figures in its own fragment (reports/security-figures/<fragment>.json),
 * replacing what the same fragment recorded before in this run. One fragment per file and leg
 * (for example `hostile-neon`), so two writers never touch one file.
 */
export function recordFigures(fragment: string, figures: Record<string, number>, dir = FIGURES_DIR): void {
  if (!/^[a-z0-9-]+$/.test(fragment)) throw new Error(`a figures fragment is named with a-z, 0-9 and -: ${fragment}`);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${fragment}.json`);
  // Written whole, then renamed: a reader never sees half a fragment.
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, `${JSON.stringify({ fragment, figures, recorded_at: new Date().toISOString() }, null, 2)}\n`);
  renameSync(partial, file);
}

export interface FigureTotals {
  totals: Record<string, number>;
  fragments: string[];
  summed_at: string;
}

/** Sums every fragment's figures (keys that describe the registry take the largest value instead). */
export function sumFigures(dir = FIGURES_DIR): FigureTotals {
  const totals: Record<string, number> = {};
  const fragments: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(dir)
      .filter((name) => name.endsWith(".json"))
      .sort();
  } catch {
    names = [];
  }
  for (const name of names) {
    const { fragment, figures } = JSON.parse(readFileSync(path.join(dir, name), "utf8")) as { fragment: string; figures: Record<string, number> };
    fragments.push(fragment);
    for (const [key, value] of Object.entries(figures)) {
      totals[key] = SAME_IN_EVERY_FRAGMENT.has(key) ? Math.max(totals[key] ?? 0, value) : (totals[key] ?? 0) + value;
    }
  }
  return { totals: Object.fromEntries(Object.entries(totals).sort(([a], [b]) => a.localeCompare(b))), fragments, summed_at: new Date().toISOString() };
}

/** Forgets the fragments of an earlier run. */
export function clearFigures(dir = FIGURES_DIR): void {
  rmSync(dir, { recursive: true, force: true });
}

export function writeTotals(totals: FigureTotals, file = TOTALS_FILE): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(totals, null, 2)}\n`);
}
