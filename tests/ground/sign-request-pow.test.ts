import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { solveGatePuzzle } from "@/lib/sign-request";

// The client helper's solver (a SHA-256 compression of its own) judged by node:crypto and by the
// fixed vector of docs/pow.md (found by an independent Python script).
const puzzle = { nonce: "09cf457aef6c3874bcb6da8e6721e2c6", name: "ada", origin: "ada.example" };
const bits = (p: typeof puzzle, solution: string) => {
  const challenge = createHash("sha256").update(`CITY-POW/1\u0000${p.nonce}\u0000${p.name}\u0000${p.origin}`).digest();
  const work = createHash("sha256")
    .update(Buffer.concat([challenge, Buffer.from(solution, "hex")]))
    .digest();
  const text = [...work].map((b) => b.toString(2).padStart(8, "0")).join("");
  return text.indexOf("1");
};

describe("the client helper's CITY-POW/1 solver (lib/sign-request.ts)", () => {
  it("finds the vector's first solutions, counting up from 0", async () => {
    expect(await solveGatePuzzle({ ...puzzle, effort: 8 })).toBe("0000000000000010");
    expect(await solveGatePuzzle({ ...puzzle, effort: 16 })).toBe("000000000001dbfb");
  });

  it("answers solutions node:crypto accepts, for other presentations and efforts, and none below", async () => {
    for (let i = 0; i < 12; i++) {
      const p = { nonce: createHash("md5").update(String(i)).digest("hex"), name: `agent ${i} é`, origin: `o${i}.example` };
      const effort = i % 11;
      const solution = await solveGatePuzzle({ ...p, effort });
      expect(solution).toMatch(/^[0-9a-f]{16}$/);
      expect(bits(p, solution)).toBeGreaterThanOrEqual(effort);
      const n = parseInt(solution, 16);
      for (let k = 0; k < n; k++) expect(bits(p, k.toString(16).padStart(16, "0"))).toBeLessThan(effort);
    }
    // Name and origin are trimmed, as the gate reads them.
    expect(await solveGatePuzzle({ ...puzzle, name: " ada", origin: "ada.example ", effort: 16 })).toBe("000000000001dbfb");
    await expect(solveGatePuzzle({ ...puzzle, effort: 40, maxTries: 1000 })).rejects.toThrow(/no CITY-POW\/1 solution/);
  });
});
