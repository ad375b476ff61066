import { describe, expect, it } from "vitest";
import { configuredWitnesses } from "@/lib/city/logs/residency-log";
import { refKey } from "../../support/rfc9162-reference";

/** CITY_LOG_WITNESSES parsed (configuredWitnesses, lib/city/logs/residency-log/witnesses.ts), beside witness-config.test.ts. */
const W1 = refKey(new Uint8Array(32).fill(3)).vkey("w1.example", 4);
const W2 = refKey(new Uint8Array(32).fill(4)).vkey("w2.example", 4);

describe("CITY_LOG_WITNESSES entries", () => {
  it("reads comma-separated entries, blanks and empty entries skipped, trailing slashes dropped", () => {
    const witnesses = configuredWitnesses(` ${W1}   https://w1.example/add//,, \n${W2}\thttp://w2.example:8080 ,`);
    expect(witnesses.map(({ name, vkey, url, verifier }) => ({ name, vkey, url, type: verifier.type }))).toEqual([
      { name: "w1.example", vkey: W1, url: "https://w1.example/add", type: 4 },
      { name: "w2.example", vkey: W2, url: "http://w2.example:8080", type: 4 },
    ]);
    expect(configuredWitnesses("")).toEqual([]);
    expect(configuredWitnesses(" , ")).toEqual([]);
  });

  it("refuses an entry without a URL or with more than a key and a URL", () => {
    const shape = "CITY_LOG_WITNESSES: each entry is '<vkey> <submission URL>'";
    expect(() => configuredWitnesses(W1)).toThrow(shape);
    expect(() => configuredWitnesses(`${W1} https://w1.example extra`)).toThrow(shape);
  });

  it("refuses a note key where a cosigner key is wanted, and a URL that is not http(s) from its start", () => {
    expect(() => configuredWitnesses(`${refKey(new Uint8Array(32).fill(3)).vkey("w1.example", 1)} https://w1.example`)).toThrow(
      "CITY_LOG_WITNESSES: w1.example's key is not a cosignature key (type 0x04)",
    );
    expect(() => configuredWitnesses(`${W1} xhttps://w1.example`)).toThrow("CITY_LOG_WITNESSES: w1.example's URL is not http(s)");
    expect(() => configuredWitnesses(`${W1} https:/w1.example`)).toThrow("CITY_LOG_WITNESSES: w1.example's URL is not http(s)");
    expect(() => configuredWitnesses(`${W1} https://`)).toThrow("CITY_LOG_WITNESSES: w1.example's URL is not a URL");
    expect(() => configuredWitnesses(`${W1} https://user@w1.example`)).toThrow(
      "CITY_LOG_WITNESSES: w1.example's URL carries credentials, and it is published: give the witness's URL without them",
    );
    expect(() => configuredWitnesses(`${W1} https://:pw@w1.example`)).toThrow(/carries credentials/);
  });
});
