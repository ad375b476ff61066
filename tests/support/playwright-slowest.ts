import type { Reporter, TestCase, TestResult } from "@playwright/test/reporter";

/*
 * The five slowest spec files of a Playwright run, in the line scripts/test.sh gathers from every
 * lane (`slowest files: (playwright) ...`, as tests/support/run-summary.ts prints vitest's).
 * Playwright's own reportSlowTests leaves out every file whose tests ran on more than one worker,
 * which with fullyParallel is most of them; here a file's time is its tests' durations summed
 * over every worker (retries included), so every file is ranked.
 */
export default class SlowestSpecFiles implements Reporter {
  private readonly seconds = new Map<string, number>();

  onTestEnd(test: TestCase, result: TestResult): void {
    const file = test.location.file.replace(`${process.cwd()}/`, "");
    this.seconds.set(file, (this.seconds.get(file) ?? 0) + result.duration / 1000);
  }

  onEnd(): void {
    const timed = [...this.seconds].sort((a, b) => b[1] - a[1]);
    if (timed.length === 0) return;
    const top = timed.slice(0, 5).map(([file, seconds]) => `${file} ${seconds.toFixed(1)} s`);
    console.log(`\nslowest files: (playwright) ${top.join(", ")} (${timed.length} files, test time summed over workers)`);
  }

  printsToStdio(): boolean {
    return false;
  }
}
