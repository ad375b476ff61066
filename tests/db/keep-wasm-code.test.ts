import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

// tests/support/keep-wasm-code.mjs turns V8's WebAssembly code collector off for every vitest run
// (Node 24's V8 can abort a process that frees WebAssembly code: see that module). Shown in a bare
// Node that V8 itself tells about its collector (--trace-wasm-code-gc), on a workload where the
// collector must run: a WebAssembly function that adds one, tiered up at its first call
// (--wasm-tiering-budget=1, synchronously), which leaves its first code unused, with V8 told to
// collect at the first unused byte (--stress-wasm-code-gc).
const root = path.resolve(__dirname, "../..");
const keepModule = path.join(root, "tests/support/keep-wasm-code.mjs");
// (module (func (export "f") (param i32) (result i32) local.get 0 i32.const 1 i32.add))
const addOne = [0, 97, 115, 109, 1, 0, 0, 0, 1, 6, 1, 96, 1, 127, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 9, 1, 7, 0, 32, 0, 65, 1, 106, 11];
const V8_FLAGS = ["--trace-wasm-code-gc", "--stress-wasm-code-gc", "--wasm-sync-tier-up", "--wasm-tiering-budget=1"];
const collections = /^\[wasm-gc\] Triggering GC/m;

/** What a bare Node prints running the tiered-up function a thousand times, after `prelude`. */
function tierUp(prelude: string): string {
  const script = `${prelude}
const { instance } = await WebAssembly.instantiate(new Uint8Array(${JSON.stringify(addOne)}));
let sum = 0;
for (let i = 0; i < 1000; i++) sum = instance.exports.f(sum);
console.log("sum", sum);`;
  return execFileSync(process.execPath, [...V8_FLAGS, "--input-type=module", "-e", script], { encoding: "utf8" });
}

// Node 20's V8 (11.3) has no --wasm-sync-tier-up: there the tier-up would race the process's end.
const major = Number(process.versions.node.split(".")[0]);

describe("V8's WebAssembly code collector in test runs", () => {
  it("runs on the workload without the module, and never with it", (ctx) => {
    if (major < 22) return ctx.skip(`Node ${major}'s V8 cannot tier up synchronously (--wasm-sync-tier-up): Node 22 or newer`);
    const without = tierUp("");
    expect(without).toContain("sum 1000");
    expect(without).toMatch(collections);
    const withModule = tierUp(`await import(${JSON.stringify(pathToFileURL(keepModule).href)});`);
    expect(withModule).toContain("sum 1000");
    expect(withModule).not.toMatch(collections);
  });

  it("is turned off by vitest.config.mts, which every vitest run loads", () => {
    expect(readFileSync(path.join(root, "vitest.config.mts"), "utf8")).toMatch(/^import "\.\/tests\/support\/keep-wasm-code\.mjs";$/m);
  });
});
