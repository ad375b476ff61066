import type { Reporter, TestModule } from "vitest/node";

/**
 * A reporter beside vitest's default (vitest.config.mts), for the end of a run:
 * - every skipped test with its reason, one line per reason: the note of `ctx.skip(note)`, or for
 *   a skipped suite (describeMissingServer's `... [PostgreSQL] skipped: <why>`) the suite's name,
 *   which carries the reason. A skip that gives none is named as such, one line each (none should:
 *   docs/testing.md); a run filtered by name (`-t`) skips the rest and is not counted.
 * - the slowest test files of the run with their seconds (`slowest files:` lines, which
 *   scripts/test.sh gathers from every lane at its end).
 */
export default class RunSummary implements Reporter {
  private filtered = false;

  onInit(vitest: { config: { testNamePattern?: RegExp } }): void {
    this.filtered = Boolean(vitest.config.testNamePattern);
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const reasons = new Map<string, { count: number; files: Set<string> }>();
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state !== "skipped" || test.options.mode === "todo") continue;
        if (this.filtered && test.options.mode === "skip" && !result.note) continue;
        let reason = result.note;
        for (let parent = test.parent; !reason && parent.type === "suite"; parent = parent.parent) {
          const said = / skipped: (.+)$/.exec(parent.name);
          if (said) reason = said[1];
        }
        reason ??= `NO REASON GIVEN: ${test.fullName}`;
        const entry = reasons.get(reason) ?? { count: 0, files: new Set<string>() };
        entry.count += 1;
        entry.files.add(module.moduleId.replace(`${process.cwd()}/`, ""));
        reasons.set(reason, entry);
      }
    }
    if (reasons.size > 0) {
      const total = [...reasons.values()].reduce((sum, r) => sum + r.count, 0);
      console.log(`\n${total} skipped tests, by reason:`);
      for (const [reason, { count, files }] of [...reasons].sort((a, b) => b[1].count - a[1].count)) {
        const where = [...files].map((f) => f.split("/").pop());
        console.log(
          `  ${String(count).padStart(4)}  ${reason} (${where.length > 3 ? `${where.slice(0, 3).join(", ")} and ${where.length - 3} more` : where.join(", ")})`,
        );
      }
    }
    const timed = testModules
      .map((m) => ({ file: m.moduleId.replace(`${process.cwd()}/`, ""), ms: m.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5);
    if (timed.length > 1) {
      console.log(`\nslowest files: ${timed.map((t) => `${t.file} ${(t.ms / 1000).toFixed(1)} s`).join(", ")} (${testModules.length} files)`);
    }
  }
}
