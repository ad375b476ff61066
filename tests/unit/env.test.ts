import { describe, expect, it } from "vitest";
import { EnvError, parseEnv } from "@/lib/env";

describe("environment", () => {
  it("defaults to embedded PGlite under .city-data and localhost", () => {
    const env = parseEnv({});
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.CITY_DATA_DIR).toBe(".city-data");
    expect(env.CITY_BASE_URL).toBe("http://localhost:3000");
    expect(env.CITY_GATE_PER_ADDRESS_PER_HOUR).toBe(30);
  });

  it("treats empty variables as unset and trims a trailing slash from the base URL", () => {
    const env = parseEnv({ DATABASE_URL: "", CITY_BASE_URL: "https://city.example/" });
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.CITY_BASE_URL).toBe("https://city.example");
  });

  it("names every bad variable in one clear message", () => {
    const attempt = () =>
      parseEnv({ DATABASE_URL: "mysql://nope", CITY_BASE_URL: "not a url", CITY_GATE_PER_ADDRESS_PER_HOUR: "-3" });
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
    const set = parseEnv({ CLINIC_HYGIEIA_BASE_URL: "https://api.anthropic.com/v1", CLINIC_HYGIEIA_MODEL: "claude-x", CLINIC_HYGIEIA_PROTOCOL: "anthropic-messages" });
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
