import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import { leadingZeroBits, powChallenge } from "@/lib/city/challenge/pow";
import { solutionEffort, solvePow, POW_MAX_EFFORT } from "@/lib/city/challenge";
import { POW_BASE_EFFORT, POW_EFFORT_RISE, powShares, pressureLevel, stepTotals, suggestedEffort } from "@/lib/city/challenge/pow-effort";
import { cityWindow, bucketOf, RATE_BUCKETS } from "@/lib/city/bounds";

// The oracle: CITY-POW/1 as docs/pow.md writes it, hashed here with @noble/hashes (the city hashes
// with node:crypto), and the fixed vector of docs/pow.md, found by an independent script (Python hashlib).
const binding = { nonce: "09cf457aef6c3874bcb6da8e6721e2c6", name: "ada", origin: "ada.example" };
const VECTOR = {
  challenge: "69569af8bde96f0a448c7bc9c25b4e9fb4bfe02fd24cbf460bff5987d2c2a27c",
  solution: "000000000001dbfb",
  work: "00000088dba83e2f9135adbd35c520cf491614f182751592ad1437af013a54d7",
  bits: 24,
};
const oracleChallenge = (b: typeof binding) => sha256(utf8ToBytes(`CITY-POW/1\u0000${b.nonce}\u0000${b.name}\u0000${b.origin}`));
const oracleWork = (b: typeof binding, solution: string) => sha256(new Uint8Array([...oracleChallenge(b), ...hexToBytes(solution)]));
const oracleBits = (hash: Uint8Array) => {
  const bits = [...hash].map((byte) => byte.toString(2).padStart(8, "0")).join("");
  return bits.indexOf("1") === -1 ? 256 : bits.indexOf("1");
};

describe("CITY-POW/1, the gate's puzzle", () => {
  it("hashes the fixed vector of docs/pow.md byte for byte", () => {
    expect(bytesToHex(oracleChallenge(binding))).toBe(VECTOR.challenge);
    expect(bytesToHex(powChallenge(binding))).toBe(VECTOR.challenge);
    expect(bytesToHex(oracleWork(binding, VECTOR.solution))).toBe(VECTOR.work);
    expect(solutionEffort(binding, VECTOR.solution)).toBe(VECTOR.bits);
  });

  it("counts leading zero bits from the most significant bit of the first byte", () => {
    for (const [hex, bits] of [
      ["80", 0],
      ["40", 1],
      ["01", 7],
      ["0080", 8],
      ["000001", 23],
      ["00000000", 32],
    ] as const) {
      expect(
        leadingZeroBits(
          hexToBytes(
            hex
              .padEnd(64, "f")
              .slice(0, 64)
              .replace(/f+$/, (m) => "f".repeat(m.length)),
          ),
        ),
      ).toBe(bits);
    }
    for (let i = 0; i < 200; i++) {
      const hash = sha256(utf8ToBytes(`x${i}`));
      expect(leadingZeroBits(hash)).toBe(oracleBits(hash));
    }
  });

  it("finds solutions the oracle accepts at each effort, counting up from 0", () => {
    for (const effort of [0, 1, 4, 8, 12]) {
      const found = solvePow(binding, effort)!;
      expect(oracleBits(oracleWork(binding, found.solution))).toBeGreaterThanOrEqual(effort);
      expect(solutionEffort(binding, found.solution)).toBe(oracleBits(oracleWork(binding, found.solution)));
      // The first one: no smaller candidate reaches the effort.
      for (let n = 0; n < found.tries - 1; n++) expect(oracleBits(oracleWork(binding, n.toString(16).padStart(16, "0")))).toBeLessThan(effort);
    }
  });

  it("binds the nonce, the name and the origin: the vector's solution proves nothing for another presentation", () => {
    for (const other of [
      { ...binding, nonce: "19cf457aef6c3874bcb6da8e6721e2c6" },
      { ...binding, name: "eve" },
      { ...binding, origin: "eve.example" },
      // The fields split one way only: moving text between name and origin changes the challenge.
      { ...binding, name: "ada\u0000ada.example", origin: "" },
    ]) {
      expect(solutionEffort(other, VECTOR.solution)).toBe(oracleBits(oracleWork(other, VECTOR.solution)));
      expect(solutionEffort(other, VECTOR.solution)).toBeLessThan(VECTOR.bits);
    }
    // Trimmed as the gate reads them.
    expect(solutionEffort({ ...binding, name: " ada ", origin: "ada.example\n" }, VECTOR.solution)).toBe(VECTOR.bits);
  });

  it("proves nothing with a malformed, short or missing solution", () => {
    for (const bad of [undefined, "", "1dbfb", "000000000001DBFB", "000000000001dbfb00", "00000000001dbfb", "zz0000000001dbfb"]) {
      expect(solutionEffort(binding, bad)).toBe(0);
    }
    // A wrong solution: its effort is what its hash shows, far short of the vector's.
    expect(solutionEffort(binding, "000000000001dbfa")).toBe(oracleBits(oracleWork(binding, "000000000001dbfa")));
    expect(solutionEffort(binding, "000000000001dbfa")).toBeLessThan(POW_BASE_EFFORT);
  });
});

describe("the suggested effort", () => {
  const ceiling = cityWindow("gate-admissions", 40, 3600);
  const shares = powShares(40);
  const steps = (...newestFirst: number[]) => [...newestFirst, ...new Array<number>(RATE_BUCKETS + 1 - newestFirst.length).fill(0)];

  it("is 0 when idle and below the open share: nobody pays anything", () => {
    expect(shares).toEqual({ open: 30, bids: 40 });
    expect(suggestedEffort(steps(), shares)).toBe(0);
    expect(suggestedEffort(steps(29), shares)).toBe(0);
    expect(suggestedEffort(steps(10, 10, 9), shares)).toBe(0);
  });

  it("climbs from the base at the open share to the most when the last slot is left", () => {
    expect(suggestedEffort(steps(30), shares)).toBe(Math.max(POW_BASE_EFFORT, POW_EFFORT_RISE));
    expect(suggestedEffort(steps(35), shares)).toBe(POW_BASE_EFFORT + Math.floor((5 * (POW_MAX_EFFORT - POW_BASE_EFFORT)) / 10));
    expect(suggestedEffort(steps(40), shares)).toBe(POW_MAX_EFFORT);
    expect(suggestedEffort(steps(400), shares)).toBe(POW_MAX_EFFORT);
  });

  it("rises by the step in each step that still admits past the open share, to the most and no further (Tor's additive rise)", () => {
    // The window reached its share k steps ago, and one bid came in each step since: k + 1 contended steps.
    const levels = Array.from({ length: RATE_BUCKETS + 1 }, (_, k) => pressureLevel(steps(...new Array<number>(k).fill(1), 30), shares));
    expect(levels).toEqual(levels.map((_, k) => Math.min(POW_MAX_EFFORT, (k + 1) * POW_EFFORT_RISE)));
    // Eight contended steps: the larger of the level and the price of what is left.
    expect(suggestedEffort(steps(1, 1, 1, 1, 1, 1, 1, 30), shares)).toBe(Math.max(POW_BASE_EFFORT + Math.floor((7 * 10) / 10), 8 * POW_EFFORT_RISE));
    expect(suggestedEffort(steps(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 30), shares)).toBe(POW_MAX_EFFORT);
    // Admissions below the share raise nothing.
    expect(pressureLevel(steps(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 17), shares)).toBe(0);
  });

  it("loses a third in each calm step (Tor's decay by two thirds); a flood without bids, all refused, raises nothing", () => {
    // Filled 12 steps ago, bids in each of the next 7 steps (level 16), then 5 steps with none: 10, 6, 4, 2, 1.
    const calm = steps(0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 30);
    expect(pressureLevel(calm, shares)).toBe(1);
    const expected = [8 * POW_EFFORT_RISE];
    for (let i = 0; i < 5; i++) expected.push(Math.floor((expected.at(-1)! * 2) / 3));
    for (let calmSteps = 0; calmSteps <= 5; calmSteps++) {
      const history = steps(...new Array<number>(calmSteps).fill(0), ...new Array<number>(7).fill(1), 30);
      expect(pressureLevel(history, shares), `${calmSteps} calm steps`).toBe(expected[calmSteps]);
    }
    // The window at its share and nothing admitted since (every presentation without a bid refused): the base price, no more.
    expect(suggestedEffort(steps(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30), shares)).toBe(POW_BASE_EFFORT);
  });

  it("reads the per-step totals from the stripes' JSON, shifted to the current step", () => {
    const now = new Date("2026-11-29T12:00:00Z");
    const current = bucketOf(ceiling, now);
    const json = [
      { subject: "city/0", bucket: current, bucket_ms: 300_000, counts: [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3] },
      { subject: "city/1", bucket: current - 2, bucket_ms: 300_000, counts: "{4,0,0,0,0,0,0,0,0,0,0,5,6}" },
      { subject: "city/2", bucket: current, bucket_ms: 600_000, counts: [9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9] },
    ];
    expect(stepTotals(json, ceiling, now)).toEqual([1, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
    expect(stepTotals(JSON.stringify(json), ceiling, now)).toEqual(stepTotals(json, ceiling, now));
    expect(stepTotals(null, ceiling, now)).toEqual(new Array(RATE_BUCKETS + 1).fill(0));
  });
});
