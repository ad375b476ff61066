import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { recordFigures, sumFigures } from "../support/figures";

/*
 * The security figures are written by test files running in parallel processes: no writer may
 * lose another's figures (the old single shared file, read-modified-written by each, did).
 */

const dir = mkdtempSync(path.join(os.tmpdir(), "city-figures-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tsx = path.join(process.cwd(), "node_modules", ".bin", "tsx");
const figuresModule = path.join(process.cwd(), "tests", "support", "figures.ts");

describe("security figures", () => {
  it("keeps every figure of four processes recording at once, 25 times each", async () => {
    const writers = Array.from({ length: 4 }, (_, w) => {
      const script = `import { recordFigures } from ${JSON.stringify(figuresModule)};
        for (let i = 1; i <= 25; i++) recordFigures("writer-${w}", { inputs_${w}: i, inputs: i, doors_covered: 54 }, ${JSON.stringify(dir)});`;
      return promisify(execFile)(tsx, ["-e", script]);
    });
    await Promise.all(writers);
    const { totals, fragments } = sumFigures(dir);
    expect(fragments).toHaveLength(4);
    for (let w = 0; w < 4; w++) expect(totals[`inputs_${w}`], `writer ${w}`).toBe(25);
    expect(totals.inputs).toBe(4 * 25);
    // A figure about the registry is the same in every fragment: not multiplied by the writers.
    expect(totals.doors_covered).toBe(54);
  }, 60_000);

  it("replaces a fragment's own earlier figures instead of adding to them", () => {
    const own = mkdtempSync(path.join(os.tmpdir(), "city-figures-"));
    recordFigures("leg", { inputs: 3 }, own);
    recordFigures("leg", { inputs: 5 }, own);
    recordFigures("other-leg", { inputs: 2, secret_hits: 0 }, own);
    expect(sumFigures(own).totals).toEqual({ inputs: 7, secret_hits: 0 });
    rmSync(own, { recursive: true, force: true });
  });

  it("refuses a fragment name that is not a plain file name", () => {
    expect(() => recordFigures("../escape", { inputs: 1 }, dir)).toThrow(/fragment/);
  });
});
