import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

// Not test-results/: Playwright empties that folder when it starts, after the vitest projects ran.
const FILE = path.join(process.cwd(), "reports", "security-figures.json");

/** Adds figures of this run to reports/security-figures.json (read by SECURITY.md's author). */
export function recordFigures(figures: Record<string, number>): void {
  mkdirSync(path.dirname(FILE), { recursive: true });
  let current: Record<string, unknown> = {};
  try {
    current = JSON.parse(readFileSync(FILE, "utf8")) as Record<string, unknown>;
  } catch {
    current = {};
  }
  writeFileSync(FILE, `${JSON.stringify({ ...current, ...figures, updated_at: new Date().toISOString() }, null, 2)}\n`);
}
