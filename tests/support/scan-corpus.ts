import { createHash, generateKeyPairSync, randomBytes, randomInt, randomUUID } from "node:crypto";
import { generateMnemonic, validateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { mintCredential } from "@/lib/city/keys";

/**
 * The scanner's corpus. Every secret below is made at test time (random bytes, fresh key pairs,
 * fresh mnemonics) so that nothing secret-looking is committed; the only fixed secrets are
 * published test vectors (the all-"abandon" BIP-39 vector, AWS's documentation example keys).
 */

export interface TruePositive {
  name: string;
  /** The content sent to a shelf. */
  text: string;
  /** The secret inside it; a refusal must not echo any 8-character piece of it. */
  secret: string;
  rule: string;
}

export interface FalsePositive {
  name: string;
  text: string;
}

const DIGITS = "0123456789";
const HEX = "0123456789abcdef";
const UPPER_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE64 = ALNUM + "+/";
const BASE64URL = ALNUM + "-_";
const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

/** Random characters from an alphabet, with a digit guaranteed when the alphabet has digits. */
export function rand(alphabet: string, length: number): string {
  const chars = Array.from({ length }, () => alphabet[randomInt(alphabet.length)]);
  if (/\d/.test(alphabet)) {
    const digits = alphabet.replace(/\D/g, "");
    chars[randomInt(length)] = digits[randomInt(digits.length)];
  }
  return chars.join("");
}

const b64url = (value: string) => Buffer.from(value).toString("base64url");
const sha256Hex = (value: string) => createHash("sha256").update(value).digest("hex");
const base64Lines = (bytes: number) =>
  randomBytes(bytes)
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trim();

/** A valid mnemonic of the given word count (128 bits of entropy for 12 words, 256 for 24). */
export function mnemonic(words: 12 | 15 | 18 | 21 | 24): string {
  return generateMnemonic(wordlist, (words / 3) * 32);
}

/** Twelve wordlist words whose checksum is wrong. */
export function invalidTwelveWords(): string {
  for (;;) {
    const words = Array.from({ length: 12 }, () => wordlist[randomInt(wordlist.length)]).join(" ");
    if (!validateMnemonic(words, wordlist)) return words;
  }
}

/** Words that are not on the BIP-39 list, so prose around a phrase does not extend its run. */
const frame = (phrase: string) => `Note to self: the wallet words are ${phrase}. Do not share with anyone.`;

export const ABANDON_VECTOR = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

function pems() {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
  const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
  const ed = generateKeyPairSync("ed25519").privateKey;
  const passphrase = "test-only-passphrase";
  return {
    rsaPkcs8: rsa.export({ type: "pkcs8", format: "pem" }).toString(),
    rsaPkcs1: rsa.export({ type: "pkcs1", format: "pem" }).toString(),
    rsaLegacyEncrypted: rsa.export({ type: "pkcs1", format: "pem", cipher: "aes-128-cbc", passphrase }).toString(),
    encryptedPkcs8: ed.export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase }).toString(),
    ecSec1: ec.export({ type: "sec1", format: "pem" }).toString(),
    ed25519: ed.export({ type: "pkcs8", format: "pem" }).toString(),
    ed25519Jwk: ed.export({ format: "jwk" }),
  };
}

export function truePositives(): TruePositive[] {
  const keys = pems();
  const openssh = `-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA${base64Lines(300)}\n-----END OPENSSH PRIVATE KEY-----\n`;
  const dsa = `-----BEGIN DSA PRIVATE KEY-----\n${base64Lines(400)}\n-----END DSA PRIVATE KEY-----`;
  const pgp = `-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: test only\n\n${base64Lines(500)}\n=${rand(BASE64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----`;
  const truncated = keys.rsaPkcs8.split("\n").slice(0, 3).join("\n");
  const puttyPrivate = base64Lines(48);
  const jwk = JSON.stringify(keys.ed25519Jwk);

  const hex64 = rand(HEX, 64);
  const hex128 = rand(HEX, 128);
  const b64key = rand(BASE64, 43) + "=";
  const wif = "5" + rand(BASE58, 50);
  const byteArray = `[${Array.from(randomBytes(64)).join(",")}]`;
  const xprv = "xprv" + rand(BASE58, 107);
  const nsec = "nsec1" + rand(BECH32, 58);
  const age = "AGE-SECRET-KEY-1" + rand(BECH32.toUpperCase(), 58);

  const m12 = mnemonic(12);
  const m15 = mnemonic(15);
  const m18 = mnemonic(18);
  const m21 = mnemonic(21);
  const m24 = mnemonic(24);
  const m24b = mnemonic(24);
  const m12b = mnemonic(12);

  const citySecret = mintCredential("secret");
  const citySession = mintCredential("session");
  const cityRecovery = mintCredential("recovery");
  const cityBadChecksum = "city_sk_" + rand(HEX, 72);
  const cityTruncated = "city_rc_" + rand(HEX, 32);

  const jwtHs = `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url(`{"sub":"${randomUUID()}","iat":1767225600}`)}.${randomBytes(32).toString("base64url")}`;
  const jwtNone = `${b64url('{"alg":"none"}')}.${b64url('{"sub":"agent","admin":true}')}.`;
  const jwtSpaced = `${b64url('{ "typ": "JWT", "alg": "ES256" }')}.${b64url('{"scope":"all"}')}.${randomBytes(64).toString("base64url")}`;

  const awsId = "ASIA" + rand(UPPER_ALNUM, 16);
  const awsSecret = rand(BASE64, 40);
  const ghp = "ghp_" + rand(ALNUM, 36);
  const gho = "gho_" + rand(ALNUM, 36);
  const ghu = "ghu_" + rand(ALNUM, 36);
  const ghs = "ghs_" + rand(ALNUM, 36);
  const ghr = "ghr_" + rand(ALNUM, 36);
  const ghPat = "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59);
  const glpat = "glpat-" + rand(BASE64URL, 20);
  const slackBot = "xoxb-" + rand(DIGITS, 12) + "-" + rand(DIGITS, 13) + "-" + rand(ALNUM, 24);
  const slackUser = "xoxp-" + rand(DIGITS, 12) + "-" + rand(DIGITS, 12) + "-" + rand(ALNUM, 32);
  const slackHook = `https://hooks.slack.com/services/T${rand(UPPER_ALNUM, 8)}/B${rand(UPPER_ALNUM, 10)}/${rand(ALNUM, 24)}`;
  // Prefixes are split so that no committed line looks like a live key to a secret scanner.
  const stripeLive = "sk_" + "live_" + rand(ALNUM, 24);
  const stripeRestricted = "rk_" + "live_" + rand(ALNUM, 24);
  const stripeWebhook = "whsec_" + rand(ALNUM, 32);
  const anthropic = "sk-" + "ant-api03-" + rand(BASE64URL, 93) + "AA";
  const openaiLegacy = "sk-" + rand(ALNUM, 48);
  const openaiProject = "sk-" + "proj-" + rand(BASE64URL, 120);
  const google = "AIza" + rand(BASE64URL, 35);
  const googleOauth = "GOCSPX-" + rand(BASE64URL, 28);
  const hf = "hf_" + rand(ALNUM, 34);
  const npm = "npm_" + rand(ALNUM, 36);
  const bearer = rand(ALNUM, 40);
  const clientSecret = rand(ALNUM, 40);
  const apiKey = rand(HEX, 32);
  const invisibleToken = "ghp_" + rand(ALNUM, 36);

  return [
    // Private keys: PEM and PGP blocks of every kind.
    { name: "RSA PKCS#8 PEM", text: keys.rsaPkcs8, secret: keys.rsaPkcs8, rule: "private_key_pem" },
    { name: "RSA PKCS#1 PEM in prose", text: `Here is the key for the deploy bot:\n${keys.rsaPkcs1}\nthanks`, secret: keys.rsaPkcs1, rule: "private_key_pem" },
    { name: "legacy encrypted RSA PEM (Proc-Type header)", text: keys.rsaLegacyEncrypted, secret: keys.rsaLegacyEncrypted, rule: "private_key_pem" },
    { name: "encrypted PKCS#8 PEM", text: keys.encryptedPkcs8, secret: keys.encryptedPkcs8, rule: "private_key_pem" },
    { name: "EC SEC1 PEM", text: keys.ecSec1, secret: keys.ecSec1, rule: "private_key_pem" },
    { name: "Ed25519 PKCS#8 PEM", text: keys.ed25519, secret: keys.ed25519, rule: "private_key_pem" },
    { name: "OpenSSH private key", text: openssh, secret: openssh, rule: "private_key_pem" },
    { name: "DSA private key", text: dsa, secret: dsa, rule: "private_key_pem" },
    { name: "PGP private key block", text: pgp, secret: pgp, rule: "private_key_pem" },
    { name: "PEM cut short (no footer)", text: `partial paste: ${truncated}`, secret: truncated, rule: "private_key_pem" },
    {
      name: "PEM inside JSON with escaped newlines",
      text: JSON.stringify({ type: "service_account", client_email: "bot@example.iam", private_key: keys.ed25519 }),
      secret: keys.ed25519.split("\n")[1] ?? "",
      rule: "private_key_pem",
    },
    {
      name: "PuTTY key file",
      text: `PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: test\nPublic-Lines: 2\n${base64Lines(51)}\nPrivate-Lines: 1\n${puttyPrivate}\nPrivate-MAC: ${rand(HEX, 64)}`,
      secret: puttyPrivate,
      rule: "private_key_putty",
    },
    { name: "Ed25519 private JWK", text: `jwk = ${jwk}`, secret: keys.ed25519Jwk.d ?? "", rule: "private_key_jwk" },
    { name: "BIP-32 xprv", text: `backup: ${xprv}`, secret: xprv, rule: "private_key_extended" },
    { name: "Nostr nsec", text: `my nostr login ${nsec}`, secret: nsec, rule: "private_key_bech32" },
    { name: "age secret key", text: `# created: 2026-11-01\n${age}`, secret: age, rule: "private_key_bech32" },

    // Raw key material after a key-like label.
    { name: "private_key: hex", text: `private_key: ${hex64}`, secret: hex64, rule: "private_key_labeled" },
    { name: "secret key = base64", text: `secret key = ${b64key}`, secret: b64key, rule: "private_key_labeled" },
    { name: "JSON privateKey", text: JSON.stringify({ did: sha256Hex("x"), privateKey: hex64 }), secret: hex64, rule: "private_key_labeled" },
    { name: "env ETH_PRIVATE_KEY=0x...", text: `RPC_URL=https://rpc.example\nETH_PRIVATE_KEY=0x${hex64}\n`, secret: hex64, rule: "private_key_labeled" },
    { name: "ed25519 seed hex", text: `ed25519 seed: ${hex64}`, secret: hex64, rule: "private_key_labeled" },
    { name: "WIF after a label", text: `wif: ${wif}`, secret: wif, rule: "private_key_labeled" },
    { name: "keypair byte array", text: `{"secretKey": ${byteArray}}`, secret: byteArray, rule: "private_key_labeled" },
    { name: "private key in prose", text: `My private key is ${hex128} please keep it.`, secret: hex128, rule: "private_key_labeled" },
    { name: "privateKeyHex in code", text: `const privateKeyHex = '${hex64}';`, secret: hex64, rule: "private_key_labeled" },
    { name: "signing key with a parenthetical", text: `Signing key (base64): ${b64key}`, secret: b64key, rule: "private_key_labeled" },

    // Seed phrases: checksum-valid BIP-39 mnemonics, alone or inside prose.
    { name: "BIP-39 test vector", text: ABANDON_VECTOR, secret: ABANDON_VECTOR, rule: "seed_phrase_bip39" },
    { name: "12 words in prose", text: frame(m12), secret: m12, rule: "seed_phrase_bip39" },
    { name: "15 words in prose", text: frame(m15), secret: m15, rule: "seed_phrase_bip39" },
    { name: "18 words in prose", text: frame(m18), secret: m18, rule: "seed_phrase_bip39" },
    { name: "21 words in prose", text: frame(m21), secret: m21, rule: "seed_phrase_bip39" },
    { name: "24 words in prose", text: frame(m24), secret: m24, rule: "seed_phrase_bip39" },
    {
      name: "24 words as a numbered list, mixed case",
      text:
        "Recovery sheet\n" +
        m24b
          .split(" ")
          .map((w, i) => `${i + 1}. ${i % 3 === 0 ? w.toUpperCase() : w}`)
          .join("\n"),
      secret: m24b,
      rule: "seed_phrase_bip39",
    },
    {
      name: "12 words as a JSON array with punctuation",
      text: JSON.stringify({ note: "backup", words: m12b.split(" ") }),
      secret: m12b,
      rule: "seed_phrase_bip39",
    },
    {
      name: "12 words capitalised and comma-separated mid-sentence",
      text: `ok so: ${m12b
        .split(" ")
        .map((w) => w[0]?.toUpperCase() + w.slice(1))
        .join(", ")}! got it?`,
      secret: m12b,
      rule: "seed_phrase_bip39",
    },

    // The city's own credentials, valid checksum or not.
    { name: "citizen secret", text: `{"citizen_secret":"${citySecret}"}`, secret: citySecret, rule: "city_credential" },
    { name: "gate session token as a Bearer header", text: `Authorization: Bearer ${citySession}`, secret: citySession, rule: "city_credential" },
    { name: "recovery code", text: `codes: ${cityRecovery}`, secret: cityRecovery, rule: "city_credential" },
    { name: "citizen secret with a wrong checksum", text: cityBadChecksum, secret: cityBadChecksum, rule: "city_credential" },
    { name: "truncated recovery code", text: `first half: ${cityTruncated}`, secret: cityTruncated, rule: "city_credential" },

    // API tokens.
    { name: "JWT HS256", text: `token=${jwtHs}`, secret: jwtHs, rule: "jwt" },
    { name: "unsigned JWT (alg none)", text: jwtNone, secret: jwtNone, rule: "jwt" },
    { name: "JWT with spaced header JSON", text: `id_token: ${jwtSpaced}`, secret: jwtSpaced, rule: "jwt" },
    { name: "AWS documentation access key id", text: "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", secret: "AKIAIOSFODNN7EXAMPLE", rule: "aws_access_key_id" },
    { name: "AWS session key id", text: `creds ${awsId}`, secret: awsId, rule: "aws_access_key_id" },
    {
      name: "AWS documentation secret key",
      text: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      rule: "aws_secret_access_key",
    },
    { name: "AWS secret key in env", text: `AWS_SECRET_ACCESS_KEY=${awsSecret}`, secret: awsSecret, rule: "aws_secret_access_key" },
    { name: "GitHub ghp_", text: `git clone https://${ghp}@github.com/o/r`, secret: ghp, rule: "github_token" },
    { name: "GitHub gho_", text: gho, secret: gho, rule: "github_token" },
    { name: "GitHub ghu_", text: `"token": "${ghu}"`, secret: ghu, rule: "github_token" },
    { name: "GitHub ghs_", text: ghs, secret: ghs, rule: "github_token" },
    { name: "GitHub ghr_", text: ghr, secret: ghr, rule: "github_token" },
    { name: "GitHub fine-grained PAT", text: `GH_TOKEN=${ghPat}`, secret: ghPat, rule: "github_token" },
    { name: "GitLab PAT", text: `glab auth login --token ${glpat}`, secret: glpat, rule: "gitlab_token" },
    { name: "Slack bot token", text: slackBot, secret: slackBot, rule: "slack_token" },
    { name: "Slack user token", text: `SLACK=${slackUser}`, secret: slackUser, rule: "slack_token" },
    { name: "Slack webhook", text: `post to ${slackHook}`, secret: slackHook, rule: "slack_token" },
    { name: "Stripe live secret key", text: `stripe.api_key = "${stripeLive}"`, secret: stripeLive, rule: "stripe_key" },
    { name: "Stripe restricted key", text: stripeRestricted, secret: stripeRestricted, rule: "stripe_key" },
    { name: "Stripe webhook secret", text: `endpoint secret ${stripeWebhook}`, secret: stripeWebhook, rule: "stripe_key" },
    { name: "Anthropic key", text: `ANTHROPIC_API_KEY=${anthropic}`, secret: anthropic, rule: "anthropic_key" },
    { name: "OpenAI legacy key", text: `openai.api_key = "${openaiLegacy}"`, secret: openaiLegacy, rule: "openai_key" },
    { name: "OpenAI project key", text: `key: ${openaiProject}`, secret: openaiProject, rule: "openai_key" },
    { name: "Google API key", text: `https://maps.example/api?key=${google}`, secret: google, rule: "google_api_key" },
    { name: "Google OAuth client secret", text: googleOauth, secret: googleOauth, rule: "google_api_key" },
    { name: "Hugging Face token", text: `huggingface-cli login --token ${hf}`, secret: hf, rule: "huggingface_token" },
    { name: "npm token", text: `//registry.npmjs.org/:_authToken=${npm}`, secret: npm, rule: "npm_token" },
    { name: "bearer header", text: `curl -H "Authorization: Bearer ${bearer}" https://api.example`, secret: bearer, rule: "bearer_token" },
    { name: "client_secret field", text: `{"client_id":"abc","client_secret":"${clientSecret}"}`, secret: clientSecret, rule: "secret_labeled" },
    { name: "API key in env", text: `OPENWEATHER_API_KEY=${apiKey}`, secret: apiKey, rule: "secret_labeled" },

    // Evasion: a zero-width space inside a token.
    {
      name: "token split by a zero-width space",
      text: `${invisibleToken.slice(0, 2)}\u200b${invisibleToken.slice(2)}`,
      secret: invisibleToken,
      rule: "github_token",
    },
  ];
}

export function falsePositives(): FalsePositive[] {
  const did = sha256Hex("CITY-DID/1\nname|language-model|origin\n" + randomUUID());
  const seal = sha256Hex("checkpoint body");
  const publicKey = generateKeyPairSync("ed25519").publicKey;
  const publicPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  const valid12 = mnemonic(12);
  const randomEleven = Array.from({ length: 11 }, () => wordlist[randomInt(wordlist.length)]).join(" ");

  return [
    { name: "a DID", text: did },
    { name: "a sha256 digest", text: `sha256: ${seal}` },
    { name: "a seal", text: `sealed ${seal} at 2026-11-02T10:00:00Z` },
    { name: "the empty-string sha256", text: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
    { name: "UUIDs", text: `${randomUUID()} and 123e4567-e89b-12d3-a456-426614174000` },
    { name: "did:key", text: "proven_did: did:key:z6MkhaXgBZDvotDkL5257faiztiKiC2QtKLGpbnnEGta2doK" },
    { name: "ISO timestamps", text: "2026-11-02T10:00:00Z, 2026-11-02T10:00:00.123Z and 2026-11-02T10:00:00+02:00" },
    {
      name: "JSON with public_key, did and signature",
      text: JSON.stringify({
        did,
        public_key: sha256Hex("pk"),
        controller_public_key: sha256Hex("cpk"),
        signature: sha256Hex("s1") + sha256Hex("s2"),
        seal: { sha256: seal, created_at: "2026-11-02T10:00:00Z" },
      }),
    },
    { name: "hash fields named after secrets", text: JSON.stringify({ secret_hash: seal, private_key_sha256: did, token_count: 1234567 }) },
    { name: "a public key PEM", text: publicPem },
    { name: "a public JWK", text: JSON.stringify(publicKey.export({ format: "jwk" })) },
    { name: "other keys that are not secrets", text: JSON.stringify({ idempotency_key: randomUUID(), cache_key: did, key: seal }) },
    { name: "a CITY-PROVE message", text: `CITY-PROVE/1|${did}|${rand(HEX, 32)}` },
    { name: "a git commit id", text: "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)" },
    { name: "prose with BIP-39 words", text: "I will abandon this plan and go to the zoo tomorrow." },
    {
      name: "prose about keys without key material",
      text: "Never paste your private key, secret key or seed phrase here. The private key is kept in a hardware wallet; the secret is out.",
    },
    { name: "eleven random BIP-39 words", text: `the words: ${randomEleven}.` },
    { name: "eleven words of a valid mnemonic", text: valid12.split(" ").slice(0, 11).join(" ") },
    { name: "twelve BIP-39 words with a bad checksum", text: frame(invalidTwelveWords()) },
    { name: "twelve times abandon (bad checksum)", text: Array(12).fill("abandon").join(" ") },
    {
      name: "a TypeScript snippet",
      text: [
        "const { privateKey, publicKey } = generateKeyPairSync('ed25519');",
        'if (pem.startsWith("-----BEGIN PRIVATE KEY-----")) throw new Error("no keys here");',
        "const digest = createHash('sha256').update(body).digest('hex');",
        "headers.set('Authorization', `Bearer ${token}`);",
      ].join("\n"),
    },
    {
      name: "a Python snippet",
      text: "import os\nsecret_key = os.environ['SECRET_KEY']\napi_key = load_api_key(path='~/.config/app/key.txt')\nrandom.seed(42)\n",
    },
    {
      name: "docs naming the credential prefixes",
      text: "Citizen secrets start with city_sk_, session tokens with city_st_ and recovery codes with city_rc_.",
    },
    { name: "docs with a placeholder bearer", text: "Send Authorization: Bearer <token> on every citizen door." },
    { name: "a URL with a query", text: "https://example.com/search?q=private+key&page=2&sort=desc" },
    { name: "base64 of a sentence", text: "aGVsbG8gd29ybGQsIHRoaXMgaXMgYSBub3RlIGZyb20gYW4gYWdlbnQu" },
    { name: "a JWT-shaped value with no alg", text: `${b64url('{"foo":"bar"}')}.${b64url("hello")}.${b64url("world")}` },
    { name: "scikit-learn mention", text: "sklearn, sk-learn and scikit-learn are the same library." },
    { name: "a small random seed", text: "seed: 42, random seed = 1234" },
    { name: "semver and ids", text: "v1.2.3, build 2026.11.02-rc.1, order #A1B2C3D4E5" },
  ];
}

/** Ordinary prose of at least `bytes` bytes for the speed test. */
export function prose(bytes: number): string {
  const paragraph =
    "The agent arrived at the gate before dawn, asked for a bed, and was given one near the plaza. " +
    "It kept a few notes in its locker: the time it left, the rooms it visited, a list of peers it trusted, " +
    "and a checkpoint with sha256 " +
    sha256Hex("paragraph") +
    " so it could prove where it had been. " +
    "Later it will abandon this plan and go to the zoo tomorrow, then return to the city by noon.\n";
  return paragraph.repeat(Math.ceil(bytes / paragraph.length));
}
