import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TestSpecification } from "vitest/node";
import ClockWaitersFirst from "../support/clock-sequencer.mjs";

// The run's file order (tests/support/clock-sequencer.mts) on real files of this repository: two that
// may wait on the clock (awayFromStepTurn, awayFromHourTurn) and three that do not, with the sizes
// vitest would otherwise order them by (larger first).
const root = process.cwd();
const SIZES: Record<string, number> = {
  "http:tests/challenge/http/gate-pow.test.ts": 10,
  "http:tests/doors/http/headers.test.ts": 300,
  "http:tests/surfaces/http/mcp.test.ts": 200,
  "domain:tests/bounds/store-bounds.test.ts": 50,
  "domain:tests/shelves/vault.test.ts": 500,
};
const spec = (key: string) => {
  const [project, file] = key.split(":") as [string, string];
  return {
    moduleId: path.join(root, file),
    project: { name: project, config: { sequence: { groupOrder: 0 }, isolate: true } },
  } as unknown as TestSpecification;
};
const sequencer = new ClockWaitersFirst({
  config: { root },
  cache: { getFileTestResults: () => undefined, getFileStats: (key: string) => ({ size: SIZES[key] }) },
} as never);
const order = async (keys: string[]) => (await sequencer.sort(keys.map(spec))).map((s) => `${s.project.name}:${path.relative(root, s.moduleId)}`);

describe("the run's file order", () => {
  it("puts a file that may wait on the clock first in its project, and keeps vitest's order (larger first) for the rest", async () => {
    expect(
      await order(["http:tests/surfaces/http/mcp.test.ts", "http:tests/challenge/http/gate-pow.test.ts", "http:tests/doors/http/headers.test.ts"]),
    ).toEqual(["http:tests/challenge/http/gate-pow.test.ts", "http:tests/doors/http/headers.test.ts", "http:tests/surfaces/http/mcp.test.ts"]);
  });

  it("keeps the projects apart: a waiter goes first in its own project, not before another project's files", async () => {
    expect(
      await order([
        "http:tests/challenge/http/gate-pow.test.ts",
        "domain:tests/shelves/vault.test.ts",
        "http:tests/doors/http/headers.test.ts",
        "domain:tests/bounds/store-bounds.test.ts",
      ]),
    ).toEqual([
      "domain:tests/bounds/store-bounds.test.ts",
      "domain:tests/shelves/vault.test.ts",
      "http:tests/challenge/http/gate-pow.test.ts",
      "http:tests/doors/http/headers.test.ts",
    ]);
  });
});
