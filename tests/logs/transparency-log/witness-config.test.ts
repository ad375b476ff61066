import * as ed from "@noble/ed25519";
import { describe, expect, it } from "vitest";
import { configuredWitnesses } from "@/lib/city/logs/residency-log";
import { witnessVkey } from "@/lib/tlog/witness";

// CITY_LOG_WITNESSES is published: the card and the log page list every witness's URL.
describe("CITY_LOG_WITNESSES", () => {
  const vkey = witnessVkey("witness.example/w1", ed.utils.randomSecretKey());

  it("takes a plain http(s) URL and drops its trailing slash", () => {
    expect(configuredWitnesses(`${vkey} https://witness.example/w1/`).map((w) => w.url)).toEqual(["https://witness.example/w1"]);
  });

  it.each(["https://user:secret@witness.example/w1", "https://token@witness.example/w1", "http://:pw@witness.example"])(
    "refuses a URL that carries credentials, which would be published: %s",
    (url) => {
      expect(() => configuredWitnesses(`${vkey} ${url}`)).toThrow(/carries credentials/);
    },
  );

  it("refuses a URL that is not one, and a scheme that is not http(s)", () => {
    expect(() => configuredWitnesses(`${vkey} https://`)).toThrow(/not a URL/);
    expect(() => configuredWitnesses(`${vkey} ftp://witness.example`)).toThrow(/not http\(s\)/);
  });
});
