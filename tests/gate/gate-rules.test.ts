import { describe, expect, it } from "vitest";
import { normalKey } from "@/lib/city/directory";
import { checkGateText } from "@/lib/city/gate/gate-content";

describe("the published normal form of names and origins", () => {
  it("folds case, compatibility forms and Cyrillic or Greek look-alikes to one key", () => {
    expect(normalKey("\u0430lice")).toBe(normalKey("Alice"));
    expect(normalKey("Example.com")).toBe(normalKey("example.com"));
    expect(normalKey("\uff21lice")).toBe(normalKey("alice"));
    expect(normalKey("\u039Alio")).toBe(normalKey("klio"));
    expect(normalKey("\u0391LICE")).toBe(normalKey("alice"));
    expect(normalKey("alice")).not.toBe(normalKey("alicia"));
  });

  it("gives every character the gate keeps alone a key that is not blank, so every citizen can be searched by name and origin", async () => {
    // The gate trims a name and an origin and refuses them empty, and refuses one whose key is
    // blank (rule blank: made only of what shows nothing). Every code point of planes 0-3 and 14;
    // planes 4-13 hold none yet, 15-16 are private use (NFKC and the confusables table leave them
    // as they are). A character whose key is blank must be refused as a name and as an origin.
    const { checkGateText } = await import("@/lib/city/gate/gate-content");
    const kept: string[] = [];
    for (let cp = 0; cp <= 0xeffff; cp++) {
      if ((cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x40000 && cp < 0xe0000)) continue;
      const ch = String.fromCodePoint(cp);
      if (ch.trim() === "" || normalKey(ch).trim() !== "") continue;
      const statement = "I would like to live here.";
      if (!checkGateText({ name: ch, origin: "ok.example", statement }) || !checkGateText({ name: "ok", origin: ch, statement }))
        kept.push(`U+${cp.toString(16).toUpperCase()}`);
    }
    expect(kept).toEqual([]);
  });
});

describe("what /llms.txt tells agents about credentials", () => {
  it("publishes the recovery message, the lesser session token and the revoke-all door", async () => {
    const { buildLlmsTxt } = await import("@/lib/doors/surfaces/llms");
    const { registry } = await import("@/lib/doors/registry");
    const text = buildLlmsTxt(registry, "http://city.test");
    expect(text).toContain("CITY-RECOVER/1|recover|<did>|<nonce>");
    expect(text).toMatch(/POST \/api\/tokens\/revoke-all/);
    expect(text).toMatch(/Mint a gate session token[^\n]*Needs the citizen secret/);
    expect(text).toMatch(/admissions per 3600 s per city/);
  });
});

describe("the gate's environment", () => {
  it("reads CITY_TRUSTED_PROXIES as vercel or a hop count, and the admissions ceiling with 600 by default and 0 as off", async () => {
    const { parseEnv, EnvError } = await import("@/lib/env");
    expect(parseEnv({}).CITY_TRUSTED_PROXIES).toBeUndefined();
    expect(parseEnv({ CITY_TRUSTED_PROXIES: "vercel" }).CITY_TRUSTED_PROXIES).toBe("vercel");
    expect(parseEnv({ CITY_TRUSTED_PROXIES: "2" }).CITY_TRUSTED_PROXIES).toBe(2);
    expect(parseEnv({ CITY_TRUSTED_PROXIES: "0" }).CITY_TRUSTED_PROXIES).toBe(0);
    expect(() => parseEnv({ CITY_TRUSTED_PROXIES: "all" })).toThrow(EnvError);
    expect(parseEnv({}).CITY_GATE_ADMISSIONS_PER_HOUR).toBe(600);
    expect(parseEnv({ CITY_GATE_ADMISSIONS_PER_HOUR: "0" }).CITY_GATE_ADMISSIONS_PER_HOUR).toBe(0);
  });
});

describe("control characters at the gate", () => {
  const clean = { name: "ctrl-test", origin: "ctrl.example", statement: "hello" };
  // C1 controls: U+0085 (next line), U+009B (a terminal's control sequence introducer), U+0080, U+009F.
  it.each(["\u0080", "\u0085", "\u009b", "\u009f", "\u0007", "\u007f"])("refuses U+%s in a name, an origin or a statement as invisible_characters", (c) => {
    for (const field of ["name", "origin", "statement"] as const) {
      expect(checkGateText({ ...clean, [field]: `a${c}b` })?.rule, `${field} U+${c.codePointAt(0)!.toString(16)}`).toBe("invisible_characters");
    }
  });
  it("lets tab and line ends stand in a statement", () => {
    expect(checkGateText({ ...clean, statement: "one\ttwo\nthree\r\n" })).toBeNull();
  });
});
