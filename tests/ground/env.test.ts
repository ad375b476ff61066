import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { EnvError, parseEnv } from "@/lib/env";

describe("environment", () => {
  it("defaults to embedded PGlite under .city-data and the address the servers listen on", () => {
    const env = parseEnv({});
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.CITY_DATA_DIR).toBe(".city-data");
    expect(env.CITY_BASE_URL).toBe("http://127.0.0.1:3000");
    expect(env.CITY_GATE_PER_ADDRESS_PER_HOUR).toBe(30);
  });

  it("treats empty variables as unset and trims a trailing slash from the base URL", () => {
    const env = parseEnv({ DATABASE_URL: "", CITY_BASE_URL: "https://city.example/" });
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.CITY_BASE_URL).toBe("https://city.example");
  });

  it("names every bad variable in one clear message", () => {
    const attempt = () => parseEnv({ DATABASE_URL: "mysql://nope", CITY_BASE_URL: "not a url", CITY_GATE_PER_ADDRESS_PER_HOUR: "-3" });
    expect(attempt).toThrow(EnvError);
    try {
      attempt();
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toContain("DATABASE_URL: must be a postgres:// or postgresql:// connection string");
      expect(message).toContain("CITY_BASE_URL");
      expect(message).toContain("CITY_GATE_PER_ADDRESS_PER_HOUR");
    }
  });

  it("parses numbers from their text and lets 0 turn the per-address gate limit off", () => {
    expect(parseEnv({ CITY_GATE_PER_ADDRESS_PER_HOUR: "0" }).CITY_GATE_PER_ADDRESS_PER_HOUR).toBe(0);
  });

  it("lets CITY_LOCKER_CITY_BYTES lower the spec's 2147483648 bytes but never raise it", () => {
    expect(parseEnv({}).CITY_LOCKER_CITY_BYTES).toBe(2147483648);
    expect(parseEnv({ CITY_LOCKER_CITY_BYTES: "2147483648" }).CITY_LOCKER_CITY_BYTES).toBe(2147483648);
    expect(parseEnv({ CITY_LOCKER_CITY_BYTES: "1048576" }).CITY_LOCKER_CITY_BYTES).toBe(1048576);
    expect(() => parseEnv({ CITY_LOCKER_CITY_BYTES: "2147483649" })).toThrow(/CITY_LOCKER_CITY_BYTES: may lower .*2147483648.* never raise it/);
  });

  it("reads the ward and clinic variables, and refuses a physician with a base URL but no model", () => {
    const env = parseEnv({});
    expect(env.CITY_WARD_PER_ADDRESS_PER_HOUR).toBe(10);
    expect(env.CLINIC_ASCLEPIUS_BASE_URL).toBeUndefined();
    expect(env.CLINIC_HYGIEIA_PROTOCOL).toBe("openai-chat");
    const set = parseEnv({
      CLINIC_HYGIEIA_BASE_URL: "https://api.anthropic.com/v1",
      CLINIC_HYGIEIA_MODEL: "claude-x",
      CLINIC_HYGIEIA_PROTOCOL: "anthropic-messages",
    });
    expect(set.CLINIC_HYGIEIA_PROTOCOL).toBe("anthropic-messages");
    expect(() => parseEnv({ CLINIC_ASCLEPIUS_BASE_URL: "https://api.openai.com/v1" })).toThrow(/CLINIC_ASCLEPIUS_MODEL/);
    expect(() => parseEnv({ CLINIC_ASCLEPIUS_API_KEY: "k" })).toThrow(/CLINIC_ASCLEPIUS_BASE_URL/);
    expect(() => parseEnv({ CLINIC_ASCLEPIUS_PROTOCOL: "grpc" })).toThrow(/CLINIC_ASCLEPIUS_PROTOCOL/);
  });
});

describe("environment: database driver", () => {
  it("accepts CITY_DB_DRIVER neon or pg and names anything else", () => {
    expect(parseEnv({ CITY_DB_DRIVER: "pg" }).CITY_DB_DRIVER).toBe("pg");
    expect(parseEnv({ CITY_DB_DRIVER: "neon" }).CITY_DB_DRIVER).toBe("neon");
    expect(parseEnv({}).CITY_DB_DRIVER).toBeUndefined();
    expect(() => parseEnv({ CITY_DB_DRIVER: "mysql" })).toThrow(/CITY_DB_DRIVER/);
  });
});

describe("environment: signing keys", () => {
  const ed25519 = () => generateKeyPairSync("ed25519").privateKey;
  const refusal = (source: Record<string, string>) => {
    try {
      parseEnv(source);
    } catch (err) {
      expect(err).toBeInstanceOf(EnvError);
      return (err as Error).message;
    }
    throw new Error("the environment was accepted");
  };

  it("reads CITY_SIGNING_KEY as PKCS#8 PEM (real or escaped line breaks) or a private JWK, into the private JWK", () => {
    const key = ed25519();
    const jwk = key.export({ format: "jwk" });
    const pem = key.export({ type: "pkcs8", format: "pem" }).toString();
    for (const value of [pem, pem.replace(/\n/g, "\\n"), JSON.stringify(jwk)]) {
      expect(parseEnv({ CITY_SIGNING_KEY: value }).CITY_SIGNING_KEY).toEqual({ kty: "OKP", crv: "Ed25519", x: jwk.x, d: jwk.d });
    }
    expect(parseEnv({}).CITY_SIGNING_KEY).toBeUndefined();
  });

  it("refuses a bad CITY_SIGNING_KEY when the environment is parsed, naming the variable and never repeating the value", () => {
    const jwk = ed25519().export({ format: "jwk" });
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const publicPem = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }).toString();
    const bad = [
      "not a key",
      `{"kty":"OKP","crv":"Ed25519","d":"${jwk.d}"`,
      JSON.stringify({ ...jwk, d: undefined }),
      rsa,
      publicPem,
      "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
    ];
    for (const value of bad) {
      const message = refusal({ CITY_SIGNING_KEY: value });
      expect(message).toMatch(/CITY_SIGNING_KEY: must be an Ed25519 private key/);
      expect(message).not.toContain(jwk.d!);
      expect(message).not.toContain("not a key");
    }
    // An x that is not d's public half would sign with one key and publish another.
    const other = ed25519().export({ format: "jwk" });
    expect(refusal({ CITY_SIGNING_KEY: JSON.stringify({ ...jwk, x: other.x }) })).toContain("CITY_SIGNING_KEY: the JWK's x is not the public half of its d");
  });

  it("reads CITY_SIGNING_KEYS_RETIRED as a JWK Set or an array, keeping kid and only the public half", () => {
    const a = ed25519().export({ format: "jwk" });
    const b = ed25519().export({ format: "jwk" });
    const set = parseEnv({ CITY_SIGNING_KEYS_RETIRED: JSON.stringify({ keys: [{ ...a, d: undefined, kid: "city-2025" }] }) }).CITY_SIGNING_KEYS_RETIRED;
    expect(set).toEqual([{ kty: "OKP", crv: "Ed25519", x: a.x, kid: "city-2025" }]);
    const list = parseEnv({ CITY_SIGNING_KEYS_RETIRED: JSON.stringify([a, { kty: "OKP", crv: "Ed25519", x: b.x }]) }).CITY_SIGNING_KEYS_RETIRED;
    expect(list).toEqual([
      { kty: "OKP", crv: "Ed25519", x: a.x },
      { kty: "OKP", crv: "Ed25519", x: b.x },
    ]);
  });

  it("refuses a bad CITY_SIGNING_KEYS_RETIRED when the environment is parsed, naming the variable and the key", () => {
    const a = ed25519().export({ format: "jwk" });
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ format: "jwk" });
    expect(refusal({ CITY_SIGNING_KEYS_RETIRED: "[{" })).toMatch(/CITY_SIGNING_KEYS_RETIRED: must be a JWK Set or an array of JWKs/);
    expect(refusal({ CITY_SIGNING_KEYS_RETIRED: JSON.stringify({ key: [a] }) })).toMatch(/CITY_SIGNING_KEYS_RETIRED: must be a JWK Set/);
    expect(refusal({ CITY_SIGNING_KEYS_RETIRED: JSON.stringify([a, rsa]) })).toMatch(/CITY_SIGNING_KEYS_RETIRED: key 1: /);
    expect(refusal({ CITY_SIGNING_KEYS_RETIRED: JSON.stringify([{ kty: "OKP", crv: "Ed25519", x: "AAAA" }]) })).toMatch(/CITY_SIGNING_KEYS_RETIRED: key 0: /);
    expect(refusal({ CITY_SIGNING_KEYS_RETIRED: JSON.stringify([{ ...a, kid: 7 }]) })).toMatch(/CITY_SIGNING_KEYS_RETIRED: key 0: .*kid/);
  });
});
