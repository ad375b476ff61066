/**
 * What CITY-POW/1 costs (docs/pow.md): the CPU seconds an honest client pays per solution at each
 * effort on one core (this process: the city's own solver, node:crypto), and the CPU a verification
 * costs the city. CPU time, not wall time (process.cpuUsage), so a busy machine shifts it little.
 *
 *   npm run bench:pow            # efforts 0..24
 *   npm run bench:pow -- 20      # efforts 0..20
 */
import { randomBytes } from "node:crypto";
import { solutionEffort, solvePow } from "@/lib/city/challenge";
import { solveGatePuzzle } from "@/lib/sign-request";

const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
};
const binding = () => ({ nonce: randomBytes(16).toString("hex"), name: "ada", origin: "ada.example" });

function hashRate(): number {
  const b = binding();
  const start = process.cpuUsage();
  const tries = solvePow(b, 256, 0, 500_000);
  if (tries !== null) throw new Error("a 256-bit solution?");
  return 500_000 / cpuSeconds(start);
}

/** The client helper's rate (lib/sign-request.ts: a SHA-256 compression in plain JavaScript, for any runtime). */
async function helperRate(): Promise<number> {
  const start = process.cpuUsage();
  await solveGatePuzzle({ ...binding(), effort: 256, maxTries: 500_000 }).catch(() => null);
  return 500_000 / cpuSeconds(start);
}

/** CPU microseconds of one verification (what the gate does per presentation carrying pow_solution), inputs made beforehand. */
function verification(name: string, origin: string): number {
  const runs = 20_000;
  const inputs = Array.from({ length: runs }, () => ({
    binding: { nonce: randomBytes(16).toString("hex"), name, origin },
    solution: randomBytes(8).toString("hex"),
  }));
  const start = process.cpuUsage();
  for (const input of inputs) solutionEffort(input.binding, input.solution);
  return (cpuSeconds(start) / runs) * 1e6;
}

async function main(): Promise<void> {
  const most = Number(process.argv[2] ?? 24);
  const rate = hashRate();
  console.log(
    `work hashes per CPU second (one core): ${Math.round(rate)} (node:crypto), ${Math.round(await helperRate())} (the client helper, plain JavaScript)`,
  );
  console.log(
    `verification, CPU us: ${verification("ada", "ada.example").toFixed(1)} (short name and origin), ${verification("é".repeat(64), "ö".repeat(200)).toFixed(1)} (64 + 200 two-byte characters)`,
  );
  console.log("| effort | expected work hashes | expected CPU s (2^effort / rate) | measured mean CPU s | solutions |");
  console.log("|---:|---:|---:|---:|---:|");
  for (let effort = 0; effort <= most; effort++) {
    const samples = effort <= 12 ? 64 : effort <= 16 ? 16 : effort <= 20 ? 6 : 3;
    const start = process.cpuUsage();
    for (let i = 0; i < samples; i++) solvePow(binding(), effort);
    const mean = cpuSeconds(start) / samples;
    console.log(`| ${effort} | ${2 ** effort} | ${(2 ** effort / rate).toFixed(effort < 10 ? 5 : 3)} | ${mean.toFixed(effort < 10 ? 5 : 3)} | ${samples} |`);
  }
}

void main();
