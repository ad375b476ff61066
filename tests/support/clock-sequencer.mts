import { readFileSync } from "node:fs";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** A file that may wait for a period's turn on the real clock (awayFromTurn and its callers, ./clock.ts). */
const waitsOnClock = /\bawayFrom(Step|Hour)?Turn\(/;

/**
 * vitest's own order (project by project; in each, files that failed last time first, then the
 * longest, then the largest), except that a file that may wait on the real clock goes first in its
 * project. Such a wait (up to a minute, one time in five for the gate's 300 s bid steps) costs
 * nothing while the other lanes keep both cores busy, but at the end of a run it is the run's own
 * end: gate-pow.test.ts, small and so last of the HTTP files, waited 47 s there in a clean-clone
 * run of 2026-12-01 (59.0 s against 11.4 and 11.9 in the two runs before).
 */
export default class ClockWaitersFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const waiters = new Set(sorted.filter((file) => waitsOnClock.test(readFileSync(file.moduleId, "utf8"))));
    const projects = [...new Set(sorted.map((file) => file.project.name))];
    return projects.flatMap((name) => {
      const own = sorted.filter((file) => file.project.name === name);
      return [...own.filter((file) => waiters.has(file)), ...own.filter((file) => !waiters.has(file))];
    });
  }
}
