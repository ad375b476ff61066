import { containsMnemonic } from "./bip39";

/**
 * The one table of content-scanner rules. The first rule that fires names the refusal.
 *
 * Every reason is a fixed sentence naming the kind of secret; nothing in a refusal is ever built
 * from the matched text. Every pattern has a left boundary or a literal prefix, so the regular
 * expressions run in time linear in the input (no rescanning of long runs from every position).
 * A bare 64-hex string (a DID, a seal, a sha256) passes: hex is only refused after a key-like label.
 */
export interface ScanRule {
  /** Stable snake_case id; doors and the restriction log may record it. */
  readonly id: string;
  /** Plain sentence naming the kind of secret found. */
  readonly reason: string;
  readonly detect: (text: string) => boolean;
}

const matches = (pattern: RegExp) => (text: string) => pattern.test(text);

/** The city's own credential prefixes (lib/city/keys/credentials.ts); a test keeps the two in step. */
export const CITY_CREDENTIAL_PREFIXES = ["city_sk_", "city_st_", "city_rc_", "city_rt_"] as const;

// Separator between a label and its value: `: `, ` = `, `": "`, `=>`, ` is `, or only a space.
const SEP = String.raw`(?=[\s"'\x60:=(\\])\\?["'\x60]?\s{0,4}(?:\([^()\n]{0,24}\)\s{0,4})?(?::=|=>|->|[:=]|\bis\b|\bwas\b)?\s{0,4}\\?["'\x60]?\s{0,4}`;
// Key material after a label: 32+ token characters with at least one digit (hex, base64, base58),
// or a JSON byte array of 32+ numbers (Solana-style keypair files).
const VALUE = String.raw`(?:(?:0x)?(?=[A-Za-z0-9+/_-]*\d)[A-Za-z0-9+/_-]{32,}|\[\s*\d{1,3}(?:\s*,\s*\d{1,3}){31,})`;
// Encoding suffixes that keep a label a label ("privateKeyHex"); "private_key_sha256" is not one.
const SUFFIX = String.raw`(?:[ _.-]?(?:hex|b58|b64|base58|base64|base64url|bytes|raw|seed|wif|pem|der|base|value|material))?`;

const PRIVATE_KEY_LABEL = String.raw`(?:priv(?:ate)?[ _.-]?key|secret[ _.-]?key|signing[ _.-]?key|master[ _.-]?key|key[ _.-]?pair|(?<![A-Za-z0-9])(?:sk|seed|wif))`;
const SECRET_LABEL = String.raw`(?:secret|api[ _.-]?key|apikey|access[ _.-]?token|auth[ _.-]?token|refresh[ _.-]?token)`;

// A PEM or PGP private-key header, then optional armour headers (`Proc-Type: ...`, `Comment: ...`),
// then 40+ base64 characters of key material. Line breaks may be real or JSON-escaped (`\n`). A
// header alone, as in code that checks for one, is not key material. Armour values are bounded so
// that no header rescans a long line.
const NL = String.raw`(?:\\[rn]|[\s"'])`;
const PEM_PRIVATE_KEY = new RegExp(
  String.raw`-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}${NL}*` +
    String.raw`(?:[A-Za-z][A-Za-z0-9-]{0,30}:[^\n\\]{0,200}(?:\r?\n|\\r\\n|\\n)${NL}*){0,8}` +
    String.raw`(?:[A-Za-z0-9+/=]${NL}*){40}`,
);

const JWT_CANDIDATE = /(?<![A-Za-z0-9_-])(e[wy][A-Za-z0-9_-]{8,})\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

/** Three base64url segments whose first decodes to a JSON object with an `alg`. */
function jwt(text: string): boolean {
  for (const candidate of text.matchAll(JWT_CANDIDATE)) {
    if (jwtHeader(candidate[1] ?? "")) return true;
  }
  return false;
}

function jwtHeader(segment: string): boolean {
  if (segment.length % 4 === 1) return false; // not the length of any base64 text
  const json = atob(segment.replace(/-/g, "+").replace(/_/g, "/")).trim();
  if (!json.startsWith("{") || !json.endsWith("}")) return false; // cheap before JSON.parse
  try {
    const header: unknown = JSON.parse(json);
    return typeof header === "object" && header !== null && typeof (header as { alg?: unknown }).alg === "string";
  } catch {
    return false; // not JSON: not a JWT header
  }
}

const JWK_PRIVATE_MEMBER = /(?<![A-Za-z0-9_$])["']?d["']?\s*:\s*["'][A-Za-z0-9_-]{20,}/;
const JWK_KTY = /["']?kty["']?\s*:/;

export const RULES: readonly ScanRule[] = [
  {
    id: "city_credential",
    reason: "A CITY credential (a citizen secret, gate session token or recovery code) is in the content.",
    // Prefix plus a long token, whatever its checksum: a mistyped secret is still a secret.
    detect: matches(new RegExp(`(?:${CITY_CREDENTIAL_PREFIXES.join("|")})[A-Za-z0-9]{16,}`)),
  },
  {
    id: "private_key_pem",
    reason: "A private key (PEM or PGP block) is in the content.",
    detect: matches(PEM_PRIVATE_KEY),
  },
  {
    id: "private_key_putty",
    reason: "A private key (PuTTY key file) is in the content.",
    detect: matches(/Private-Lines:\s*\d+\s+[A-Za-z0-9+/=]{20,}/),
  },
  {
    id: "private_key_jwk",
    reason: "A private key (JSON Web Key with a private member) is in the content.",
    detect: (text) => JWK_PRIVATE_MEMBER.test(text) && JWK_KTY.test(text),
  },
  {
    id: "private_key_extended",
    reason: "An extended private key (BIP-32 xprv) is in the content.",
    detect: matches(/(?<![A-Za-z0-9])[xyztuvXYZTUV]prv[1-9A-HJ-NP-Za-km-z]{100,}/),
  },
  {
    id: "private_key_bech32",
    reason: "A private key (Nostr nsec or age secret key) is in the content.",
    detect: matches(/(?<![A-Za-z0-9])(?:nsec1[02-9ac-hj-np-z]{58}|AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58})/),
  },
  {
    id: "seed_phrase_bip39",
    reason: "A seed-phrase (BIP-39 mnemonic, checksum-valid) is in the content.",
    detect: containsMnemonic,
  },
  {
    id: "jwt",
    reason: "A JSON Web Token is in the content.",
    detect: jwt,
  },
  {
    id: "aws_access_key_id",
    reason: "An AWS access key id is in the content.",
    detect: matches(/(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])/),
  },
  {
    id: "aws_secret_access_key",
    reason: "An AWS secret access key is in the content.",
    detect: matches(new RegExp(String.raw`(?:secret[ _.-]?access[ _.-]?key|aws[ _.-]?secret(?:[ _.-]?key)?)${SEP}[A-Za-z0-9/+=]{30,}`, "i")),
  },
  {
    id: "github_token",
    reason: "A GitHub token is in the content.",
    detect: matches(/(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/),
  },
  {
    id: "gitlab_token",
    reason: "A GitLab token is in the content.",
    detect: matches(/(?<![A-Za-z0-9_-])gl(?:pat|ptt|dt|rt|soat|cbt|imt|ft|oas)-[A-Za-z0-9_-]{20,}/),
  },
  {
    id: "slack_token",
    reason: "A Slack token or webhook address is in the content.",
    detect: matches(
      /(?<![A-Za-z0-9])(?:xox[abeprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})|hooks\.slack\.com\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]{16,}/,
    ),
  },
  {
    id: "stripe_key",
    reason: "A Stripe secret key or webhook secret is in the content.",
    detect: matches(/(?<![A-Za-z0-9])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})/),
  },
  {
    id: "anthropic_key",
    reason: "An Anthropic API key is in the content.",
    detect: matches(/(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}/),
  },
  {
    id: "openai_key",
    reason: "An OpenAI-style API key (sk-...) is in the content.",
    detect: matches(/(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{32,}/),
  },
  {
    id: "google_api_key",
    reason: "A Google API key or OAuth client secret is in the content.",
    detect: matches(/(?<![A-Za-z0-9_-])(?:AIza[0-9A-Za-z_-]{35}|GOCSPX-[A-Za-z0-9_-]{24,})/),
  },
  {
    id: "huggingface_token",
    reason: "A Hugging Face token is in the content.",
    detect: matches(/(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}/),
  },
  {
    id: "npm_token",
    reason: "An npm access token is in the content.",
    detect: matches(/(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36,}/),
  },
  {
    id: "private_key_labeled",
    reason: "Private key material after a key label (private key, secret key, seed, WIF) is in the content.",
    detect: matches(new RegExp(PRIVATE_KEY_LABEL + SUFFIX + SEP + VALUE, "i")),
  },
  {
    id: "secret_labeled",
    reason: "An API key or secret after a label (secret, api key, access token) is in the content.",
    detect: matches(new RegExp(SECRET_LABEL + SUFFIX + SEP + VALUE, "i")),
  },
  {
    id: "bearer_token",
    reason: "A bearer token (an Authorization header value) is in the content.",
    detect: matches(/(?<![A-Za-z0-9])bearer\s+(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{20,}/i),
  },
];
