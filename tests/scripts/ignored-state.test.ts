import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = process.cwd();

/** The files an operator command writes in the folder it runs from, by default: read from the scripts themselves. */
function defaultFiles(): string[] {
  const found: string[] = [];
  // A state file is written whole beside itself (<file>.tmp), then renamed over it.
  for (const [script, pattern, tmp] of [
    ["verify-log.ts", /option\("--state"\) \?\? "([^"]+)"/, true],
    ["watch-keys.ts", /option\("--state"\) \?\? "([^"]+)"/, true],
    ["witness.ts", /one\("--key-file", "([^"]+)"\)/, false],
  ] as const) {
    const match = pattern.exec(readFileSync(path.join(ROOT, "scripts", script), "utf8"));
    expect(match, `the default file of scripts/${script}`).not.toBeNull();
    found.push(match![1]!, ...(tmp ? [`${match![1]!}.tmp`] : []));
  }
  return found;
}

describe("what the operator commands keep in the working folder", () => {
  it("is ignored by git (a verifier's state, a witness's private key)", () => {
    for (const file of defaultFiles()) {
      const ignored = spawnSync("git", ["check-ignore", "-q", "--no-index", file], { cwd: ROOT });
      expect(ignored.error, "git ran").toBeUndefined();
      expect(ignored.status, `${file} is git-ignored`).toBe(0);
    }
  });
});
