/**
 * Run alone as a child process by tests/scan/scan.test.ts: prints, as one JSON object, how the
 * content scanner's CPU time grows from a sixteenth of each text to the whole of it (about 16 when
 * the scan is linear, 256 when a pattern backtracks quadratically).
 *
 * A process of its own because the measure is the process's CPU time: inside the test runner it
 * also counted the other test worker (a thread that may be running PGlite) and made a linear scan
 * look 75 times slower on a busy run. Other processes on the machine add nothing to it.
 */
import { scanContent } from "@/lib/scan";
import { prose } from "@/tests/support/scan-corpus";

const KIB = 1024;
const SIZE = 256 * KIB;

const fill = (unit: string) => (length: number) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

/** Texts shaped to make a careless pattern backtrack, and plain prose. */
const SHAPES: Record<string, (length: number) => string> = {
  prose: (length) => prose(length).slice(0, length),
  letters: fill("a"),
  hex: fill("0123456789abcdef"),
  labels: fill("secret="),
  spacedLabels: fill("private key "),
  pemHeaders: fill("-----BEGIN PRIVATE KEY-----\n"),
  jwtLike: fill("eyJhbGciOi."),
  prefixes: fill("sk-ghp_AKIA"),
  dashes: fill("-"),
  wordlistRun: fill("seed "),
  byteArrays: fill("key pair: [1, 2, "),
  armourLines: fill("-----BEGIN PRIVATE KEY-----A: " + " ".repeat(300)),
};

/** The CPU time (microseconds) of the fastest of five runs after a warm-up. */
function cpuMicros(run: () => void): number {
  run(); // warm-up: compile the regular expressions and the wordlist map
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const start = process.cpuUsage();
    run();
    const spent = process.cpuUsage(start);
    best = Math.min(best, spent.user + spent.system);
  }
  return best;
}

function growth(textOf: (size: number) => string): number {
  const part = textOf(SIZE / 16);
  const whole = textOf(SIZE);
  // A floor of 100 µs, so a scan too quick to time does not make a ratio of rounding noise.
  return (
    Math.max(
      cpuMicros(() => scanContent(whole)),
      100,
    ) /
    Math.max(
      cpuMicros(() => scanContent(part)),
      100,
    )
  );
}

const figures = Object.fromEntries(Object.entries(SHAPES).map(([name, textOf]) => [name, growth(textOf)]));
process.stdout.write(JSON.stringify(figures));
