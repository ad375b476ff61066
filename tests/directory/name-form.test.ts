import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkGateText } from "@/lib/city/gate/gate-content";
import { normalKey } from "@/lib/city/directory";
import unhomoglyph from "unhomoglyph";
import { LOOK_ALIKE_INVISIBLES } from "../support/look-alikes";

/**
 * Default_Ignorable_Code_Point as Unicode's DerivedCoreProperties.txt lists it (Unicode 15.1 to
 * 17.0 agree), copied here as literals: the property test's oracle, independent of the regex
 * property the code uses.
 */
const DEFAULT_IGNORABLE: readonly [number, number][] = [
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x061c, 0x061c],
  [0x115f, 0x1160],
  [0x17b4, 0x17b5],
  [0x180b, 0x180f],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x206f],
  [0x3164, 0x3164],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
  [0xffa0, 0xffa0],
  [0xfff0, 0xfff8],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
  [0xe0000, 0xe0fff],
];

const hex = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
const at = (text: string, index: number, ch: string) => {
  const cps = [...text];
  cps.splice(index, 0, ch);
  return cps.join("");
};

describe("the normal form removes what shows nothing (issue 29, item 3)", () => {
  it("gives each of the 20 reported code points, anywhere in a name or an origin, the plain text's key", () => {
    // Expected keys as literals: NFKC, folded, and the confusables table's skeleton of the plain text (m is rn).
    for (const cp of LOOK_ALIKE_INVISIBLES) {
      const ch = String.fromCodePoint(cp);
      for (const name of [at("Alice", 0, ch), at("Alice", 2, ch), at("Alice", 5, ch), `A${ch}l${ch}i${ch}c${ch}e${ch}`]) {
        expect(normalKey(name), `${hex(cp)} in ${JSON.stringify(name)}`).toBe("alice");
      }
      for (const origin of [at("example.com", 7, ch), at("example.com", 11, ch)]) {
        expect(normalKey(origin), `${hex(cp)} in ${JSON.stringify(origin)}`).toBe("exarnple.corn");
      }
    }
  });

  it("removes every Default_Ignorable_Code_Point of Unicode's own list, and the blank fillers outside it", () => {
    const kept: string[] = [];
    for (const [from, to] of DEFAULT_IGNORABLE) {
      for (let cp = from; cp <= to; cp++) if (normalKey(`a${String.fromCodePoint(cp)}b`) !== "ab") kept.push(hex(cp));
    }
    // Braille blank, Khitan small script filler, musical null notehead; white space of every kind.
    for (const cp of [0x2800, 0x16fe4, 0x1d159, 0x0020, 0x0009, 0x00a0, 0x1680, 0x2003, 0x2028, 0x202f, 0x3000, 0x0085]) {
      if (normalKey(`a${String.fromCodePoint(cp)}b`) !== "ab") kept.push(hex(cp));
    }
    expect(kept).toEqual([]);
  });

  it("never changes a key when Default_Ignorable code points are inserted anywhere (property)", () => {
    const ignorable = fc.oneof(...DEFAULT_IGNORABLE.map(([min, max]) => fc.integer({ min, max }))).map((cp) => String.fromCodePoint(cp));
    const text = fc.oneof(
      fc.string({ unit: "binary", maxLength: 24 }),
      fc.string({ unit: "grapheme", maxLength: 12 }),
      fc.constantFrom("Alice", "example.com", "Ｂｏｂ", "Аlice", "한글 이름", "مرحبا", "👩‍💻 dev"),
    );
    fc.assert(
      fc.property(text, fc.array(fc.tuple(fc.nat(), ignorable), { minLength: 1, maxLength: 4 }), (plain, inserts) => {
        let padded = plain;
        for (const [where, ch] of inserts) padded = at(padded, where % ([...padded].length + 1), ch);
        expect(normalKey(padded)).toBe(normalKey(plain));
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps what is visible: a heart with its emoji selector is the heart, a visible mark is another key", () => {
    expect(normalKey("Alice\u2764\uFE0F")).toBe("alice\u2764");
    expect(normalKey("Alice\u2764")).toBe("alice\u2764");
    expect(normalKey("Al-ice")).toBe("al-ice");
    expect(normalKey("Ali\u0301ce")).toBe("al\u00edce");
  });

  it("refuses a name or an origin made only of invisible or blank characters (rule blank), and keeps one with a visible character", () => {
    const statement = "I would like to live here.";
    for (const blank of ["\u3164", "\u2800\u2800\u2800", "\u00AD", "\u115F\u1160", "\uFFA0 \uFE0F", "\u{E0041}\u{E0042}", "\u{1D173}"]) {
      expect(checkGateText({ name: blank, origin: "ok.example", statement }), JSON.stringify(blank)).toMatchObject({ rule: "blank" });
      expect(checkGateText({ name: "Alice", origin: blank, statement }), JSON.stringify(blank)).toMatchObject({ rule: "blank" });
    }
    expect(checkGateText({ name: "\u3164Alice\u2800", origin: "ok\u00AD.example", statement })).toBeNull();
  });
});

/** Form 1, as lib/city/directory/names.ts computed it before migration 0026 (kept here as the older form's definition). */
function formOne(text: string): string {
  const reduced = text.normalize("NFKC").replace(/[^\x00-\x7f]/gu, (ch) => unhomoglyph(ch));
  return unhomoglyph(reduced.toLowerCase()).toLowerCase().normalize("NFKC");
}

describe("migration 0026 marks for recomputing only the rows whose keys can change", () => {
  it("leaves the key of every text of printable ASCII without a space as form 1 gave it (property), the rows it does not mark", () => {
    const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((cp) => String.fromCharCode(cp)), minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(printable, (text) => {
        expect(normalKey(text)).toBe(formOne(text));
      }),
      { numRuns: 2000 },
    );
    // And a space, or a character outside printable ASCII, is what may change it (so those rows are marked).
    expect(normalKey("Frank Lee")).not.toBe(formOne("Frank Lee"));
    expect(normalKey("Ali\u00ADce")).not.toBe(formOne("Ali\u00ADce"));
  });
});

describe("the published normal form says what it removes", () => {
  it("is stated in llms.txt, the agent card's gate skill and /api/capabilities", async () => {
    const { buildLlmsTxt } = await import("@/lib/doors/surfaces/llms");
    const { buildAgentCard } = await import("@/lib/doors/surfaces/a2a-card");
    const { registry } = await import("@/lib/doors/registry");
    const { CONTAINMENT } = await import("@/lib/city/capabilities");
    const card = buildAgentCard(registry, "http://city.test", "CITY", "0");
    const gateSkill = card.skills.find((s) => s.id === "present-at-gate")!.description;
    for (const [where, text] of [
      ["llms.txt", buildLlmsTxt(registry, "http://city.test")],
      ["agent card", gateSkill],
      ["capabilities", CONTAINMENT.impersonation],
    ] as const) {
      for (const words of ["Default_Ignorable_Code_Point", "variation selector", "U+2800", "NFKC", "confusables"])
        expect(text, `${where}: ${words}`).toContain(words);
    }
    expect(buildLlmsTxt(registry, "http://city.test")).toMatch(/made only of such invisible or blank characters is filtered \(rule blank\)/);
  });
});
