import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * scripts/machine-cpu.sh, which npm test and .ci/run end with: the machine's busy CPU-s over the
 * run, read from /proc/stat. Fixed kernel figures (two snapshots of its first line), fixed
 * answers.
 */

const folder = mkdtempSync(path.join(os.tmpdir(), "city-machine-cpu-"));

/** The script reading `stat` as the kernel's /proc/stat, on 2 cores at 100 ticks a second. */
function script(stat: string, ...args: string[]): { status: number | null; out: string } {
  const result = spawnSync("bash", ["scripts/machine-cpu.sh", ...args], {
    env: { ...process.env, CITY_PROC_STAT: stat, CITY_CLK_TCK: "100", CITY_CPU_CORES: "2" },
    encoding: "utf8",
  });
  return { status: result.status, out: result.stdout };
}

/** The script on a /proc/stat whose first line is `cpu` and these columns. */
function run(cpuColumns: string, ...args: string[]): { status: number | null; out: string } {
  const stat = path.join(folder, `stat-${Math.random().toString(36).slice(2)}`);
  writeFileSync(stat, `cpu  ${cpuColumns}\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1 2 3\n`);
  return script(stat, ...args);
}

describe("scripts/machine-cpu.sh", () => {
  it("reads busy (user, nice, system, irq, softirq), idle (idle, iowait) and steal from the cpu line", () => {
    //            user  nice system idle  iowait irq softirq steal guest guest_nice
    expect(run("1000 20 300 5000 40 6 70 8 100 0", "now")).toEqual({ status: 0, out: "1396 5040 8\n" });
  });

  it("says how much work a stretch was: busy CPU-s of all, the share, the steal and the floor on these cores", () => {
    // 156,100 busy ticks, 11,700 idle and 200 stolen since "1396 5040 8": 1,561 CPU-s of 1,680.
    const { status, out } = run("126000 496 30000 15740 1000 0 1000 208 0 0", "since", "1396 5040 8");
    expect(status).toBe(0);
    expect(out).toBe("machine CPU: 1561 CPU-s busy of 1680 on 2 cores (92 %), 2 CPU-s stolen by the hypervisor; this much work ends no sooner than 780 s\n");
  });

  it("prints nothing without a start, or where the kernel's figures cannot be read", () => {
    expect(run("1 0 1 1 0 0 0 0 0 0", "since", "")).toEqual({ status: 0, out: "" });
    expect(script(path.join(folder, "none"), "now")).toEqual({ status: 0, out: "" });
  });

  it("refuses a call it does not know", () => {
    expect(run("1 0 1 1 0 0 0 0 0 0", "later").status).toBe(2);
  });
});
