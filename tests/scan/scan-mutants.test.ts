import { describe, expect, it } from "vitest";
import { assertClean, ContentRefusedError, RULES, SCANNER_FAILED, scanContent, scanWith } from "@/lib/scan";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { checksumValid, containsMnemonic, MAX_CHECKS, MNEMONIC_LENGTHS, ScanBudgetExceeded } from "@/lib/scan/bip39";

/**
 * The content scanner's rules (lib/scan/) at their edges, beside scan.test.ts and its corpus: for
 * each rule the shortest token it refuses, one character shorter, a word character before it, a
 * character outside its alphabet. Every text is written here; none is made by the code judged.
 */
const token = (n: number, alphabet = "aB3") => Array.from({ length: n }, (_, i) => alphabet[i % alphabet.length]).join("");
const b64url = (s: string) => Buffer.from(s).toString("base64url");
const detect = (id: string, text: string) => {
  const rule = RULES.find((r) => r.id === id);
  if (!rule) throw new Error(`no rule ${id}`);
  return rule.detect(text);
};

const JWT_BODY = `${b64url('{"sub":"1"}')}.sig`;

/** [rule, text, refused?] */
const EDGES: Array<[string, string, boolean]> = [
  ["city_credential", `city_sk_${token(16)}`, true],
  ["city_credential", `city_st_${token(16)}`, true],
  ["city_credential", `city_rc_${token(16)}`, true],
  ["city_credential", `city_sk_${token(15)}`, false],
  ["city_credential", `city_sk_${"-".repeat(16)}`, false],
  ["city_credential", `city_xx_${token(16)}`, false],

  ["private_key_pem", `-----BEGIN PRIVATE KEY-----\n${token(40, "AbC1+/=")}`, true],
  ["private_key_pem", `-----BEGIN PRIVATE KEY-----\n${token(39, "AbC1+/=")}`, false],
  ["private_key_pem", `----BEGIN RSA PRIVATE KEY----\n${token(40)}`, true],
  ["private_key_pem", `-----BEGIN OPENSSH PRIVATE KEY-----${token(40)}`, true],
  ["private_key_pem", `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${token(40)}`, true],
  ["private_key_pem", `----- BEGIN EC PRIVATE KEY -----\n${token(40)}`, true],
  ["private_key_pem", `---BEGIN PRIVATE KEY---\n${token(40)}`, false],
  ["private_key_pem", `-----BEGIN PUBLIC KEY-----\n${token(40)}`, false],
  ["private_key_pem", `-----BEGINPRIVATE KEY-----\n${token(40)}`, false],
  ["private_key_pem", `-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,AB\n\n${token(40)}`, true],
  ["private_key_pem", `"-----BEGIN PRIVATE KEY-----\\nComment: x\\r\\n\\n${token(20)}\\n${token(20)}"`, true],
  ["private_key_pem", `-----BEGIN PRIVATE KEY-----\n${token(20)}\r\n${token(20)}`, true],
  ["private_key_pem", `-----BEGIN PRIVATE KEY-----\n${token(20)}!${token(20)}`, false],

  ["private_key_putty", `Private-Lines: 14\n${token(20, "Ab1+/=")}`, true],
  ["private_key_putty", `Private-Lines:14 ${token(20)}`, true],
  ["private_key_putty", `Private-Lines: 14\r\n${token(20)}`, true],
  ["private_key_putty", `Private-Lines: 14\n${token(19)}`, false],
  ["private_key_putty", `Private-Lines: 14${token(20)}`, false],
  ["private_key_putty", `Private-Lines: x\n${token(20)}`, false],

  ["private_key_jwk", `{"kty":"OKP","d":"${token(20, "aB3_-")}"}`, true],
  ["private_key_jwk", `{kty: 'OKP', d: '${token(20)}'}`, true],
  ["private_key_jwk", `{"kty":"OKP","d" : "${token(20)}"}`, true],
  ["private_key_jwk", `{"kty" : "OKP","d":"${token(20)}"}`, true],
  ["private_key_jwk", `{"kty":"OKP","d":"${token(19)}"}`, false],
  ["private_key_jwk", `{"d":"${token(20)}"}`, false],
  ["private_key_jwk", `{"kty" "OKP","d":"${token(20)}"}`, false],
  ["private_key_jwk", `{"kty":"OKP","dd":"${token(20)}"}`, false],
  ["private_key_jwk", `{"kty":"OKP","$d":"${token(20)}"}`, false],
  ["private_key_jwk", `{"kty":"OKP","d":"${token(10)}.${token(10)}"}`, false],

  ["private_key_extended", `xprv${token(100, "9AbHJNPkmz")}`, true],
  ["private_key_extended", `tprv${token(100)}`, true],
  ["private_key_extended", `Vprv${token(100)}`, true],
  ["private_key_extended", `xprv${token(99)}`, false],
  ["private_key_extended", `axprv${token(100)}`, false],
  ["private_key_extended", `wprv${token(100)}`, false],
  ["private_key_extended", `xprv${token(50)}0${token(50)}`, false],
  ["private_key_extended", `xprv${token(50)}I${token(50)}`, false],
  ["private_key_extended", `xprv${token(50)}l${token(50)}`, false],

  ["private_key_bech32", `nsec1${token(58, "02ac9hjnpz")}`, true],
  ["private_key_bech32", `nsec1${token(57, "02ac9hjnpz")}`, false],
  ["private_key_bech32", `nsec1${token(57, "02ac9hjnpz")}b`, false],
  ["private_key_bech32", `xnsec1${token(58, "02ac9hjnpz")}`, false],
  ["private_key_bech32", `AGE-SECRET-KEY-1${token(58, "02AC9HJNPZ")}`, true],
  ["private_key_bech32", `AGE-SECRET-KEY-1${token(57, "02AC9HJNPZ")}`, false],
  ["private_key_bech32", `AGE-SECRET-KEY-1${token(57, "02AC9HJNPZ")}B`, false],
  ["private_key_bech32", `9AGE-SECRET-KEY-1${token(58, "02AC9HJNPZ")}`, false],

  ["jwt", `${b64url('{"alg":"HS256"}')}.${JWT_BODY}`, true],
  ["jwt", `${b64url('{\n  "alg": "HS256"\n}')}.${JWT_BODY}`, true],
  ["jwt", `${b64url('{"alg":"HS256","k":"??>?"}')}.${JWT_BODY}`, true],
  ["jwt", `${b64url('{"alg":"HS256","k":"~~~"}')}.${JWT_BODY}`, true],
  ["jwt", `${b64url('{"alg":"a"} ')}.${JWT_BODY}`, true],
  ["jwt", `${b64url('{"alg":"a"}')}.abcd.`, true],
  ["jwt", `not a jwt, then ${b64url('{"alg":"a"}')}.abcd.`, true],
  ["jwt", `x${b64url('{"alg":"a"}')}.abcd.`, false],
  ["jwt", `${b64url('{"alg":"a"}')}.abc.`, false],
  ["jwt", `${b64url('{"alg":1}')}.${JWT_BODY}`, false],
  ["jwt", `${b64url('["alg"]')}.${JWT_BODY}`, false],
  ["jwt", `${b64url('{"alg":"a"')}.${JWT_BODY}`, false],
  ["jwt", `${b64url("{alg}")}.${JWT_BODY}`, false],
  ["jwt", `${b64url('{"alg"}')}.${JWT_BODY}`, false],
  ["jwt", `${b64url("null")}.${JWT_BODY}`, false],
  ["jwt", `eyJhbGci.${JWT_BODY}`, false],

  ["aws_access_key_id", `AKIA${token(16, "A1Z9")}`, true],
  ["aws_access_key_id", `ASIA${token(16, "A1Z9")}`, true],
  ["aws_access_key_id", `ABIA${token(16, "A1Z9")}`, true],
  ["aws_access_key_id", `ACCA${token(16, "A1Z9")}`, true],
  ["aws_access_key_id", `A3T7${token(16, "A1Z9")}`, true],
  ["aws_access_key_id", `AKIA${token(15, "A1Z9")}`, false],
  ["aws_access_key_id", `AKIA${token(17, "A1Z9")}`, false],
  ["aws_access_key_id", `AKIA${token(16, "A1Z9")}a`, false],
  ["aws_access_key_id", `xAKIA${token(16, "A1Z9")}`, false],
  ["aws_access_key_id", `AKIA${token(16, "a1z9")}`, false],

  ["aws_secret_access_key", `aws_secret_access_key = ${token(30, "aB3/+=")}`, true],
  ["aws_secret_access_key", `AWS SECRET: ${token(30)}`, true],
  ["aws_secret_access_key", `awssecretkey=${token(30)}`, true],
  ["aws_secret_access_key", `secret-access-key "${token(30)}"`, true],
  ["aws_secret_access_key", `aws_secret_access_key = ${token(29)}`, false],
  ["aws_secret_access_key", `aws_secret_access_keys = ${token(30)}`, false],

  ["github_token", `ghp_${token(30)}`, true],
  ["github_token", `gho_${token(30)}`, true],
  ["github_token", `ghu_${token(30)}`, true],
  ["github_token", `ghs_${token(30)}`, true],
  ["github_token", `ghr_${token(30)}`, true],
  ["github_token", `ghx_${token(30)}`, false],
  ["github_token", `ghp_${token(29)}`, false],
  ["github_token", `_ghp_${token(30)}`, false],
  ["github_token", `github_pat_${token(40, "aB3_")}`, true],
  ["github_token", `github_pat_${token(39, "aB3_")}`, false],
  ["github_token", `xgithub_pat_${token(40)}`, false],

  ["gitlab_token", `glpat-${token(20, "aB3_-")}`, true],
  ["gitlab_token", `glptt-${token(20)}`, true],
  ["gitlab_token", `gldt-${token(20)}`, true],
  ["gitlab_token", `glrt-${token(20)}`, true],
  ["gitlab_token", `glsoat-${token(20)}`, true],
  ["gitlab_token", `glcbt-${token(20)}`, true],
  ["gitlab_token", `glimt-${token(20)}`, true],
  ["gitlab_token", `glft-${token(20)}`, true],
  ["gitlab_token", `gloas-${token(20)}`, true],
  ["gitlab_token", `glpat-${token(19)}`, false],
  ["gitlab_token", `-glpat-${token(20)}`, false],
  ["gitlab_token", `glxx-${token(20)}`, false],

  ["slack_token", `xoxb-${token(10, "aB3-")}`, true],
  ["slack_token", `xoxa-${token(10)}`, true],
  ["slack_token", `xoxe-${token(10)}`, true],
  ["slack_token", `xoxp-${token(10)}`, true],
  ["slack_token", `xoxr-${token(10)}`, true],
  ["slack_token", `xoxs-${token(10)}`, true],
  ["slack_token", `xoxc-${token(10)}`, false],
  ["slack_token", `xoxb-${token(9)}`, false],
  ["slack_token", `axoxb-${token(10)}`, false],
  ["slack_token", `xapp-1-${token(10)}`, true],
  ["slack_token", `xapp-a-${token(10)}`, false],
  ["slack_token", `xapp-1-${token(9)}`, false],
  ["slack_token", `hooks.slack.com/services/T0123ABC/B0456DEF/${token(16)}`, true],
  ["slack_token", `hooks.slack.com/services/T0123ABC/B0456DEF/${token(15)}`, false],
  ["slack_token", `hooks.slack.com/services/Tabc/B0456DEF/${token(16)}`, false],
  ["slack_token", `hooks.slack.com/services/T0123ABC/Babc/${token(16)}`, false],
  ["slack_token", `hooksxslack.com/services/T0123ABC/B0456DEF/${token(16)}`, false],

  ["stripe_key", `sk_live_${token(16)}`, true],
  ["stripe_key", `rk_test_${token(16)}`, true],
  ["stripe_key", `sk_test_${token(15)}`, false],
  ["stripe_key", `pk_live_${token(16)}`, false],
  ["stripe_key", `xsk_live_${token(16)}`, false],
  ["stripe_key", `whsec_${token(24)}`, true],
  ["stripe_key", `whsec_${token(23)}`, false],

  ["anthropic_key", `sk-ant-${token(20, "aB3_-")}`, true],
  ["anthropic_key", `sk-ant-${token(19)}`, false],
  ["anthropic_key", `_sk-ant-${token(20)}`, false],

  ["openai_key", `sk-${token(32, "aB3_-")}`, true],
  ["openai_key", `sk-${"a".repeat(31)}1`, true],
  ["openai_key", `sk-${token(31)}`, false],
  ["openai_key", `sk-${"a".repeat(40)}`, false],
  ["openai_key", `-sk-${token(32)}`, false],

  ["google_api_key", `AIza${token(35, "aB3_-")}`, true],
  ["google_api_key", `AIza${token(34)}`, false],
  ["google_api_key", `xAIza${token(35)}`, false],
  ["google_api_key", `GOCSPX-${token(24, "aB3_-")}`, true],
  ["google_api_key", `GOCSPX-${token(23)}`, false],

  ["huggingface_token", `hf_${token(30)}`, true],
  ["huggingface_token", `hf_${token(29)}`, false],
  ["huggingface_token", `_hf_${token(30)}`, false],

  ["npm_token", `npm_${token(36)}`, true],
  ["npm_token", `npm_${token(35)}`, false],
  ["npm_token", `xnpm_${token(36)}`, false],

  ["private_key_labeled", `private_key: ${token(32, "ab12")}`, true],
  ["private_key_labeled", `private_key: ${token(31, "ab12")}`, false],
  ["private_key_labeled", `private_key: ${"a".repeat(40)}`, false],
  ["private_key_labeled", `private_key: 0x${token(32, "ab12")}`, true],
  ["private_key_labeled", `PRIVKEY=${token(32)}`, true],
  ["private_key_labeled", `priv key ${token(32)}`, true],
  ["private_key_labeled", `secret-key = "${token(32)}"`, true],
  ["private_key_labeled", `signing.key => '${token(32)}'`, true],
  ["private_key_labeled", `master key -> ${token(32)}`, true],
  ["private_key_labeled", `keypair := ${token(32)}`, true],
  ["private_key_labeled", `sk=${token(32)}`, true],
  ["private_key_labeled", `xsk=${token(32)}`, false],
  ["private_key_labeled", `seed: ${token(32)}`, true],
  ["private_key_labeled", `wif is ${token(32)}`, true],
  ["private_key_labeled", `the private key was ${token(32)}`, true],
  ["private_key_labeled", `privateKeyHex: ${token(32)}`, true],
  ["private_key_labeled", `private_key_base64url: ${token(32)}`, true],
  ["private_key_labeled", `private_key_sha256: ${token(32)}`, false],
  ["private_key_labeled", `"private_key": "${token(32)}"`, true],
  ["private_key_labeled", `\\"private_key\\": \\"${token(32)}\\"`, true],
  ["private_key_labeled", `private key (hex): ${token(32)}`, true],
  ["private_key_labeled", `private_key(${"x".repeat(25)}): ${token(32)}`, false],
  ["private_key_labeled", `private_key:${" ".repeat(8)}${token(32)}`, true],
  ["private_key_labeled", `private_key:${" ".repeat(9)}${token(32)}`, false],
  ["private_key_labeled", `secretKey: [${Array(32).fill(7).join(", ")}]`, true],
  ["private_key_labeled", `secretKey: [${Array(31).fill(7).join(", ")}]`, false],
  ["private_key_labeled", `secretKey: [${Array(32).fill(1234).join(", ")}]`, false],

  ["secret_labeled", `secret: ${token(32)}`, true],
  ["secret_labeled", `secret: ${token(31)}`, false],
  ["secret_labeled", `API key = ${token(32)}`, true],
  ["secret_labeled", `apikey=${token(32)}`, true],
  ["secret_labeled", `access_token: ${token(32)}`, true],
  ["secret_labeled", `auth-token: ${token(32)}`, true],
  ["secret_labeled", `refresh token ${token(32)}`, true],
  ["secret_labeled", `secrets: ${token(32)}`, false],

  ["bearer_token", `Authorization: Bearer ${token(20, "aB3._~+/-")}`, true],
  ["bearer_token", `bearer\t${token(20)}`, true],
  ["bearer_token", `Bearer  ${token(20)}`, true],
  ["bearer_token", `Bearer ${token(19)}`, false],
  ["bearer_token", `Bearer ${"a".repeat(30)}`, false],
  ["bearer_token", `xbearer ${token(20)}`, false],
  ["bearer_token", `Bearer${token(20)}`, false],
];

describe("every rule at its edges", () => {
  it.each(EDGES)("%s on %j: %s", (id, text, refused) => {
    expect(detect(id, text)).toBe(refused);
  });

  it("has the rules in this order, each with its reason", () => {
    expect(RULES.map((r) => r.id)).toEqual([
      "city_credential",
      "private_key_pem",
      "private_key_putty",
      "private_key_jwk",
      "private_key_extended",
      "private_key_bech32",
      "seed_phrase_bip39",
      "jwt",
      "aws_access_key_id",
      "aws_secret_access_key",
      "github_token",
      "gitlab_token",
      "slack_token",
      "stripe_key",
      "anthropic_key",
      "openai_key",
      "google_api_key",
      "huggingface_token",
      "npm_token",
      "private_key_labeled",
      "secret_labeled",
      "bearer_token",
    ]);
    expect(scanContent(`ghp_${token(30)}`)).toEqual({ ok: false, rule: "github_token", reason: "A GitHub token is in the content." });
    expect(scanContent(`token: city_sk_${token(16)} and ghp_${token(30)}`)).toEqual({
      ok: false,
      rule: "city_credential",
      reason: "A CITY credential (a citizen secret, gate session token or recovery code) is in the content.",
    });
  });

  it("refuses a JWT header of a length no base64 has without failing the scan", () => {
    // 21 characters: atob would throw on it.
    expect(scanContent(`${b64url('{"alg":"HS256"}').slice(0, 20)}A.abcd.x`)).toEqual({ ok: true });
  });
});

describe("the scan around the rules", () => {
  it("finds a secret split by each invisible character, and in full-width letters", () => {
    const secret = `ghp_${token(30)}`;
    for (const ch of ["\u00AD", "\u180E", "\u200B", "\u200C", "\u200D", "\u2060", "\uFEFF"]) {
      expect(scanContent(`${secret.slice(0, 10)}${ch}${secret.slice(10)}`).ok, ch.codePointAt(0)!.toString(16)).toBe(false);
      expect(scanContent(`${secret.slice(0, 10)}${ch}${ch}${secret.slice(10)}`).ok).toBe(false);
    }
    expect(scanContent(`${secret.slice(0, 10)}\u200E${secret.slice(10)}`).ok).toBe(true);
    expect(scanContent("\uFF47\uFF48\uFF50_" + token(30)).ok).toBe(false);
  });

  it("checks the text as sent too, not only without its invisible characters", () => {
    const seen: string[] = [];
    expect(scanWith([{ id: "r", reason: "R.", detect: (t) => (seen.push(t), false) }], "a\u200Bb")).toEqual({ ok: true });
    expect(seen).toEqual(["a\u200Bb", "ab"]);
    seen.length = 0;
    scanWith([{ id: "r", reason: "R.", detect: (t) => (seen.push(t), false) }], "ab");
    expect(seen).toEqual(["ab"]);
    expect(scanWith([{ id: "r", reason: "R.", detect: (t) => t === "a\u200Bb" }], "a\u200Bb")).toEqual({ ok: false, rule: "r", reason: "R." });
  });

  it("fails closed with the published refusal", () => {
    expect(SCANNER_FAILED).toEqual({ rule: "scanner_failed", reason: "The content scanner could not finish, so the content is refused (fail-closed)." });
    const boom = [
      {
        id: "r",
        reason: "R.",
        detect: () => {
          throw new Error("boom");
        },
      },
    ];
    expect(scanWith(boom, "x")).toEqual({
      ok: false,
      rule: "scanner_failed",
      reason: "The content scanner could not finish, so the content is refused (fail-closed).",
    });
  });

  it("throws content_refused naming the rule, with the city's table by default", () => {
    let thrown: unknown;
    try {
      assertClean(`ghp_${token(30)}`);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ContentRefusedError);
    expect((thrown as ContentRefusedError).rule).toBe("github_token");
    expect((thrown as ContentRefusedError).code).toBe("content_refused");
    expect((thrown as ContentRefusedError).detail).toBe("A GitHub token is in the content. It was not stored: resend without it. (rule: github_token)");
    expect(() => assertClean("hello")).not.toThrow();
    expect(() => assertClean(`ghp_${token(30)}`, [])).not.toThrow();
  });
});

describe("BIP-39 edges", () => {
  // The BIP-39 test vectors (trezor/python-mnemonic vectors.json), written as literals.
  const V12 = "legal winner thank year wave sausage worth useful legal winner thank yellow";
  const V24 = "zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo vote";
  const V18 = "letter advice cage absurd amount doctor acoustic avoid letter advice cage absurd amount doctor acoustic avoid letter always";
  const V12B = "scheme spot photo card baby mountain device kick cradle pact join borrow";

  it("knows the lengths and the budget", () => {
    expect(MNEMONIC_LENGTHS).toEqual([12, 15, 18, 21, 24]);
    expect(MAX_CHECKS).toBe(5000);
    expect(new ScanBudgetExceeded("x").name).toBe("ScanBudgetExceeded");
  });

  it("finds the vectors of 12, 18 and 24 words, and one of 12 after numbers and between other words", () => {
    expect(containsMnemonic(V12)).toBe(true);
    expect(containsMnemonic(V18)).toBe(true);
    expect(containsMnemonic(V24)).toBe(true);
    expect(containsMnemonic(V12B)).toBe(true);
    expect(
      containsMnemonic(
        `hello ${V12.split(" ")
          .map((w, i) => `${i + 1}. ${w}`)
          .join(" ")} bye`,
      ),
    ).toBe(true);
    expect(containsMnemonic(V12.toUpperCase())).toBe(true);
    expect(containsMnemonic(V12.split(" ").slice(1).join(" "))).toBe(false);
    expect(containsMnemonic(`${V12.split(" ").slice(0, 6).join(" ")} qqq ${V12.split(" ").slice(6).join(" ")}`)).toBe(false);
    expect(containsMnemonic(V24.replace(/vote$/, "zoo"))).toBe(false);
  });

  it("checks the checksum bits of every length", () => {
    const of = (phrase: string) => phrase.split(" ").map((w) => wordlist.indexOf(w));
    expect(checksumValid(of(V12), 0, 12)).toBe(true);
    expect(checksumValid([5, ...of(V12)], 1, 12)).toBe(true);
    expect(checksumValid(of(V12.replace(/yellow$/, "year")), 0, 12)).toBe(false);
    expect(checksumValid(of(V24), 0, 24)).toBe(true);
    expect(checksumValid(of(V24.replace(/vote$/, "wrong")), 0, 24)).toBe(false);
    expect(checksumValid(of(V12.replace(/^legal/, "winner")), 0, 12)).toBe(false);
  });

  it("stops past the budget of checks", () => {
    expect(() =>
      containsMnemonic(
        Array(MAX_CHECKS + 24)
          .fill("zoo")
          .join(" "),
      ),
    ).toThrow(ScanBudgetExceeded);
    // A run of k wordlist words costs 30 + 5 (k - 23) checks: 1017 words are exactly the budget.
    expect(containsMnemonic(Array(1017).fill("zoo").join(" "))).toBe(false);
    expect(() => containsMnemonic(Array(1018).fill("zoo").join(" "))).toThrow(new ScanBudgetExceeded("too many wordlist words in a row to check"));
    // 1004 words of zoo: 1000 windows of each of five lengths minus the short starts, under 5000 checks.
    expect(containsMnemonic(Array(1004).fill("zoo").join(" "))).toBe(false);
  });
});
