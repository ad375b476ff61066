import path from "node:path";
import { clearFigures, sumFigures, TOTALS_FILE, writeTotals } from "./figures";

/**
 * vitest's global setup for the whole run (root config, so once however many projects run):
 * forgets the figures of the last run before any test starts, and when every file has finished,
 * sums this run's fragments into reports/security-figures.json.
 */
export default function figuresOfThisRun(): () => void {
  // .ci/run runs two vitest processes side by side: it clears the figures once, before both.
  if (process.env.CITY_FIGURES_CLEARED !== "1") clearFigures();
  return () => {
    const summed = sumFigures();
    if (summed.fragments.length === 0) return;
    writeTotals(summed);
    console.log(
      `security figures of this run (${summed.fragments.length} fragments) in ${path.relative(process.cwd(), TOTALS_FILE)}: ${JSON.stringify(summed.totals)}`,
    );
  };
}
