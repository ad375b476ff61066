import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { z } from "zod";
import { privateKeyOfSeed } from "./ed25519-seed";

/** An Ed25519 key as the city holds it: the private key with its public half, or a public key alone. */
export interface Ed25519PrivateJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  d: string;
}
export interface Ed25519PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid?: string;
}

// Messages never repeat the value (it is a secret) nor a parser's message (which can quote it).
const PRIVATE_FORM = "must be an Ed25519 private key: a private JWK as JSON (kty OKP, crv Ed25519, d and x) or PKCS#8 PEM";
const PUBLIC_FORM = "must be a JWK Set or an array of JWKs, as JSON, each an Ed25519 public key (kty OKP, crv Ed25519, x)";

/**
 * CITY_SIGNING_KEY, read when the environment is parsed: PKCS#8 PEM (with real or `\n` line
 * breaks) or a private JWK, checked by importing it, and its `x` checked against its `d` (a
 * mismatch would sign with one key and publish another). The output is the private JWK.
 */
export const SigningKeyVariable = z
  .string()
  .trim()
  .min(1)
  .transform((value, ctx): Ed25519PrivateJwk => {
    const key = importPrivate(value);
    if (!key || key.asymmetricKeyType !== "ed25519") {
      ctx.addIssue({ code: "custom", message: PRIVATE_FORM });
      return z.NEVER;
    }
    const { d, x } = key.export({ format: "jwk" });
    if (value.startsWith("{") && parseJson(value)?.x !== x) {
      ctx.addIssue({ code: "custom", message: "the JWK's x is not the public half of its d" });
      return z.NEVER;
    }
    return { kty: "OKP", crv: "Ed25519", x: x!, d: d! };
  });

/** CITY_SIGNING_KEYS_RETIRED, read when the environment is parsed: every key must import as an Ed25519 public key. */
export const RetiredKeysVariable = z
  .string()
  .trim()
  .min(1)
  .transform((value, ctx): Ed25519PublicJwk[] => {
    const parsed = parseJson(value);
    const list: unknown = Array.isArray(parsed) ? parsed : (parsed as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(list)) {
      ctx.addIssue({ code: "custom", message: PUBLIC_FORM });
      return z.NEVER;
    }
    const keys: Ed25519PublicJwk[] = [];
    list.forEach((jwk: unknown, i) => {
      const key = importPublic(jwk);
      const kid = (jwk as { kid?: unknown }).kid;
      if (!key || key.asymmetricKeyType !== "ed25519" || (kid !== undefined && (typeof kid !== "string" || kid === ""))) {
        ctx.addIssue({ code: "custom", message: `key ${i}: ${PUBLIC_FORM}, with an optional non-empty string kid` });
        return;
      }
      keys.push({ kty: "OKP", crv: "Ed25519", x: key.export({ format: "jwk" }).x!, ...(typeof kid === "string" ? { kid } : {}) });
    });
    return keys;
  });

function importPrivate(value: string): KeyObject | null {
  try {
    if (value.startsWith("{")) {
      const jwk = parseJson(value);
      return jwk && typeof jwk === "object" ? importPrivateJwk(jwk) : null;
    }
    return createPrivateKey({ key: value.replace(/\\n/g, "\n"), format: "pem" });
  } catch {
    return null;
  }
}

/**
 * A private JWK imported from its `d` alone, so that its `x` is checked by the caller on every
 * Node: Node 24 refuses a JWK whose `x` is not `d`'s public half while importing it, with no word
 * of which member is wrong, where Node 20 and 22 import it.
 */
function importPrivateJwk(jwk: Record<string, unknown>): KeyObject | null {
  const { kty, crv, d, x } = jwk;
  if (kty !== "OKP" || crv !== "Ed25519" || typeof x !== "string" || typeof d !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(d)) return null;
  return privateKeyOfSeed(Buffer.from(d, "base64url"));
}

/** Only the public members are imported, so a retired entry that still carries its `d` publishes its public half. */
function importPublic(jwk: unknown): KeyObject | null {
  if (!jwk || typeof jwk !== "object") return null;
  const { kty, crv, x } = jwk as Record<string, unknown>;
  try {
    return createPublicKey({ key: { kty, crv, x } as never, format: "jwk" });
  } catch {
    return null;
  }
}

function parseJson(value: string): Record<string, unknown> | null {
  try {
    return JSON.parse(value) as Record<string, unknown>;
  } catch {
    return null;
  }
}
