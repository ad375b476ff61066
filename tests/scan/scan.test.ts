import { randomInt } from "node:crypto";
import { execFileSync } from "node:child_process";
import { validateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { describe, expect, it } from "vitest";
import { CREDENTIAL_PREFIXES } from "@/lib/city/keys";
import { CityError, toProblem } from "@/lib/errors";
import { checksumValid, containsMnemonic, MAX_CHECKS, MNEMONIC_LENGTHS, ScanBudgetExceeded } from "@/lib/scan/bip39";
import { assertClean, ContentRefusedError, RULES, SCANNER_FAILED, scanContent, scanWith, type ScanRule } from "@/lib/scan";
import { CITY_CREDENTIAL_PREFIXES } from "@/lib/scan/rules";
import { ABANDON_VECTOR, falsePositives, invalidTwelveWords, mnemonic, prose, truePositives } from "../support/scan-corpus";

const TRUE_POSITIVES = truePositives();
const FALSE_POSITIVES = falsePositives();
const KIB = 1024;

/** The secret, or the first 8-character piece of it, found in `said`; undefined when none is. */
function echoed(said: string, secret: string): string | undefined {
  if (said.includes(secret)) return secret;
  for (let i = 0; i + 8 <= secret.length; i++) {
    const piece = secret.slice(i, i + 8);
    if (said.includes(piece)) return piece;
  }
  return undefined;
}

function refusal(text: string, rules?: readonly ScanRule[]): ContentRefusedError {
  try {
    assertClean(text, rules);
  } catch (err) {
    if (err instanceof ContentRefusedError) return err;
    throw err;
  }
  throw new Error("expected the content to be refused");
}

describe("the rules table", () => {
  it("has unique snake_case ids and plain-sentence reasons", () => {
    const ids = RULES.map((rule) => rule.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const rule of RULES) {
      expect(rule.id).toMatch(/^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/);
      expect(rule.reason).toMatch(/^[A-Z].+\.$/);
    }
    expect(ids).not.toContain(SCANNER_FAILED.rule);
  });

  it("knows the same credential prefixes as lib/city/credentials", () => {
    expect([...CITY_CREDENTIAL_PREFIXES].sort()).toEqual(Object.values(CREDENTIAL_PREFIXES).sort());
  });

  it("has at least one true positive in the corpus for every rule", () => {
    const covered = new Set(TRUE_POSITIVES.map((sample) => sample.rule));
    for (const rule of RULES) expect(covered, rule.id).toContain(rule.id);
  });
});

describe("true positives are refused without echoing the secret", () => {
  it.each(TRUE_POSITIVES.map((sample) => [sample.name, sample] as const))("%s", (_name, sample) => {
    expect(sample.secret.length).toBeGreaterThanOrEqual(8);
    const verdict = scanContent(sample.text);
    expect(verdict).toEqual({ ok: false, rule: sample.rule, reason: RULES.find((r) => r.id === sample.rule)?.reason });
    if (verdict.ok) return;
    expect(echoed(verdict.reason, sample.secret)).toBeUndefined();

    const err = refusal(sample.text);
    expect(err).toBeInstanceOf(CityError);
    expect(err.code).toBe("content_refused");
    expect(err.status).toBe(422);
    expect(err.rule).toBe(sample.rule);
    expect(echoed(err.detail, sample.secret)).toBeUndefined();
    // The problem document adds only fixed texts (title, type, door) to the detail.
    const problem = toProblem(err, "/api/locker", "/api/locker");
    expect(problem).toMatchObject({ status: 422, code: "content_refused", detail: err.detail });
    expect(JSON.stringify(problem)).not.toContain(sample.secret);
  });
});

describe("false positives pass", () => {
  it.each(FALSE_POSITIVES.map((sample) => [sample.name, sample] as const))("%s", (_name, sample) => {
    expect(scanContent(sample.text)).toEqual({ ok: true });
    expect(() => assertClean(sample.text)).not.toThrow();
  });

  it("passes the empty string", () => {
    expect(scanContent("")).toEqual({ ok: true });
  });
});

describe("BIP-39 seed phrases", () => {
  it("computes the checksum exactly as @scure/bip39 does, valid and invalid", () => {
    const index = new Map(wordlist.map((word, i) => [word, i]));
    for (const length of MNEMONIC_LENGTHS) {
      const samples = [
        ...Array.from({ length: 20 }, () => mnemonic(length)),
        ...Array.from({ length: 300 }, () => Array.from({ length }, () => wordlist[randomInt(2048)]).join(" ")),
      ];
      for (const phrase of samples) {
        const indices = phrase.split(" ").map((word) => index.get(word) ?? -1);
        expect(checksumValid(indices, 0, length), phrase).toBe(validateMnemonic(phrase, wordlist));
      }
    }
  });

  it("finds a phrase inside a longer run of wordlist words", () => {
    const phrase = mnemonic(12);
    expect(containsMnemonic(`zoo tomorrow ${phrase} abandon`)).toBe(true);
  });

  it("finds the fixed vector whatever the case and punctuation", () => {
    const shouted = ABANDON_VECTOR.toUpperCase().replace(/ /g, " - ");
    expect(scanContent(`words: "${shouted}"`)).toMatchObject({ ok: false, rule: "seed_phrase_bip39" });
  });

  it("does not join words across a non-wordlist word", () => {
    const words = mnemonic(12).split(" ");
    const split = [...words.slice(0, 6), "the", ...words.slice(6)].join(" ");
    expect(containsMnemonic(split)).toBe(false);
  });

  it("passes twelve wordlist words with a bad checksum, many times over", () => {
    for (let i = 0; i < 200; i++) expect(containsMnemonic(invalidTwelveWords())).toBe(false);
  });
});

describe("fail closed", () => {
  const exploding: ScanRule = {
    id: "exploding",
    reason: "Never reached.",
    detect: () => {
      throw new Error("detector crashed near city_sk_0123456789abcdef");
    },
  };
  const never: ScanRule = { id: "never", reason: "Never fires.", detect: () => false };

  it("turns a detector that throws into a scanner_failed refusal", () => {
    expect(scanWith([never, exploding], "hello")).toEqual({
      ok: false,
      rule: "scanner_failed",
      reason: SCANNER_FAILED.reason,
    });
  });

  it("makes assertClean throw content_refused when the scanner throws, without the error's text", () => {
    const err = refusal("perfectly ordinary text", [never, exploding]);
    expect(err.code).toBe("content_refused");
    expect(err.rule).toBe("scanner_failed");
    expect(err.detail).not.toMatch(/crashed|city_sk_/);
  });

  it("refuses input that is not a string instead of letting it through", () => {
    expect(refusal(undefined as unknown as string).rule).toBe("scanner_failed");
    expect(refusal({ toString: () => "hi" } as unknown as string).rule).toBe("scanner_failed");
  });

  it("refuses, as scanner_failed, a run of wordlist words too long to check within budget", () => {
    const run = "secret ".repeat(MAX_CHECKS / 4);
    expect(() => containsMnemonic(run)).toThrow(ScanBudgetExceeded);
    expect(scanContent(run)).toMatchObject({ ok: false, rule: "scanner_failed" });
    // A shorter run with the same words is checked in full and passes (no valid checksum).
    expect(scanContent("secret ".repeat(500))).toEqual({ ok: true });
  });

  it("lets clean text through a table whose rules all pass", () => {
    expect(() => assertClean("hello", [never])).not.toThrow();
  });
});

describe("speed", () => {
  // Measured in a process of its own (tests/support/scan-growth.ts): the scanner's CPU time from a
  // sixteenth of each text to 256 KiB of it grows about 16 times when the scan is linear, 256 when
  // a pattern backtracks quadratically. A ratio of that process's own work, never a time budget.
  const growth = JSON.parse(execFileSync(process.execPath, ["--import", "tsx", "tests/support/scan-growth.ts"], { encoding: "utf8" })) as Record<
    string,
    number
  >;

  it("scans prose in time linear in its length, up to 256 KiB", () => {
    const text = prose(256 * KIB);
    expect(text.length).toBeGreaterThanOrEqual(256 * KIB);
    expect(scanContent(text)).toEqual({ ok: true });
    expect(growth.prose).toBeLessThan(64);
  });

  it("stays linear on inputs up to 256 KiB shaped to make patterns backtrack", () => {
    const shapes = Object.entries(growth).filter(([name]) => name !== "prose");
    expect(shapes.map(([name]) => name)).toContain("jwtLike");
    for (const [name, ratio] of shapes) expect(ratio, name).toBeLessThan(64);
  });
});
