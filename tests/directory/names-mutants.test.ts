import { describe, expect, it } from "vitest";
import { NAME_FORM } from "@/lib/city/directory/names";
import { NAME_FORM_TEXT, NAME_RULE, normalKey } from "@/lib/city/directory";

/**
 * The name normal form (the pure part of lib/city/directory/names.ts) against fixed vectors: each a text and
 * the key the published form gives it, written here as literals.
 */
describe("the name normal form", () => {
  it.each([
    ["Alice", "alice"],
    ["\u0430lice", "alice"],
    ["A l i c e", "alice"],
    ["Al\u00ADice", "alice"],
    ["a b  c", "abc"],
    ["x\u00A0y", "xy"],
    ["\u2800x", "x"],
    ["\u{16FE4}x", "x"],
    ["\u{1D159}x", "x"],
    ["x\uFE0F", "x"],
    ["x\u0001", "x"],
    ["x\u200E", "x"],
    ["x\u3164", "x"],
    ["x\u{E0041}", "x"],
    ["\u115F", ""],
    ["\uFB01", "fi"],
    ["\uFF21", "a"],
    ["I", "i"],
    ["\u039A", "k"],
    ["\u03BA", "\u0138"],
    ["\u039A\u0391\u0399", "kal"],
    ["rn", "rn"],
    ["MIX", "rnix"],
    ["\u210C", "h"],
    ["\u2168", "ix"],
    ["\u01C5", "d\u017E"],
    ["\u24B6", "a"],
    ["e\u0301", "\u00E9"],
    ["Example.com", "exarnple.corn"],
  ])("%j has the key %j", (text, key) => {
    expect(normalKey(text)).toBe(key);
  });

  it("is version 2, stated in the published words", () => {
    expect(NAME_FORM).toBe(2);
    expect(NAME_FORM_TEXT).toMatch(
      /^a published normal form: first every character that shows as nothing or as blank space is removed .* then Unicode NFKC, case-folded, look-alike letters reduced by the Unicode confusables table \(the UTS #39 skeleton\)$/,
    );
    expect(NAME_RULE).toBe(
      `One active bed per name and origin, compared in ${NAME_FORM_TEXT}: so Alice, \u0430lice with a Cyrillic a and Alice with a soft hyphen (U+00AD) inside, or Example.com and example.com, are the same name or origin. Name and origin are kept as given for display. A name or origin made only of such invisible or blank characters is filtered (rule blank); a | in name or origin is filtered (it separates the parts of the citizen key).`,
    );
  });
});
