// Reads the MCP conformance suite's output of a passing run and prints what a green run means:
// the checks that passed, each expected failure with its reason from the baseline's comments, and
// the failures of scenarios the requirement set does not score. Usage: node <this> OUTPUT BASELINE
import { readFileSync } from "node:fs";

const [output, baselinePath] = process.argv.slice(2);
const text = readFileSync(output, "utf8").replace(/\x1b\[[0-9;]*m/g, "");

// Baseline: comment lines give the reason of the entries that follow them.
const reasons = new Map();
let reason = "";
let lastWasEntry = false;
for (const line of readFileSync(baselinePath, "utf8").split("\n")) {
  const comment = /^\s+#\s?(.*)$/.exec(line);
  const entry = /^\s+-\s+(\S+)/.exec(line);
  if (comment) {
    reason = lastWasEntry ? comment[1] : `${reason} ${comment[1]}`.trim();
    lastWasEntry = false;
  } else if (entry) {
    reasons.set(entry[1], reason);
    lastWasEntry = true;
  }
}

const scenarios = [...text.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gm)].map((m) => ({ name: m[1], passed: +m[2], failed: +m[3] }));
const total = /^Total: (\d+) passed, (\d+) failed$/m.exec(text);
const expected = [...text.matchAll(/^\s+~ (\S+)$/gm)].map((m) => m[1]);
if (!total || scenarios.length === 0) {
  console.log(text);
  console.error("mcp conformance: the suite's summary was not found in its output (shown above)");
  process.exit(1);
}

const byReason = new Map();
for (const id of expected) {
  const why = reasons.get(id) ?? "(no reason in the baseline)";
  byReason.set(why, [...(byReason.get(why) ?? []), id]);
}
const expectedPerScenario = new Map();
for (const id of expected) {
  const scenario = id.split(":")[0];
  expectedPerScenario.set(scenario, (expectedPerScenario.get(scenario) ?? 0) + 1);
}
// An expected entry of a scenario that failed nothing is a warning the suite lists, not a failure.
const counted = scenarios.map((s) => ({ ...s, expected: Math.min(s.failed, expectedPerScenario.get(s.name) ?? 0) }));
const expectedFailures = counted.reduce((n, s) => n + s.expected, 0);
const unscored = counted.map((s) => ({ ...s, other: s.failed - s.expected })).filter((s) => s.other > 0);
const unscoredCount = unscored.reduce((n, s) => n + s.other, 0);

console.log(`MCP conformance (requirements 2026-07-28, ${scenarios.length} scenarios): green, every scored check passes.`);
console.log(`  ${total[1]} checks passed.`);
console.log(
  `  ${expectedFailures} failures expected, and ${expected.length - expectedFailures} expected warnings (scripts/mcp-conformance-baseline.yml), by reason:`,
);
for (const [why, ids] of byReason) console.log(`    - ${why}\n      ${ids.join(", ")}`);
console.log(
  `  ${unscoredCount} failures in scenarios the requirement set does not score (reported by the suite, never deciding): ${unscored.map((s) => `${s.name} ${s.other}`).join(", ")}.`,
);
if (expectedFailures + unscoredCount !== Number(total[2])) {
  console.error(`mcp conformance: ${total[2]} failures reported, ${expectedFailures + unscoredCount} accounted for`);
  process.exit(1);
}
