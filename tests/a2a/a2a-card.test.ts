import { generateKeyPairSync } from "node:crypto";
import { canonicalizeAgentCard, verifyAgentCardSignature } from "@a2a-js/sdk";
import canonicalize from "canonicalize";
import { createLocalJWKSet, flattenedVerify, base64url, exportJWK, generateKeyPair } from "jose";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import type { Database } from "@/db/client";
import { AgentCardSchema, buildAgentCard } from "@/lib/doors/surfaces/a2a-card";
import { registry } from "@/lib/doors/registry";

const signingPem = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
process.env.CITY_SIGNING_KEY = signingPem;
const retired = await exportJWK((await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })).publicKey);
process.env.CITY_SIGNING_KEYS_RETIRED = JSON.stringify({ keys: [{ ...retired, kid: "city-2025" }] });

// With CITY_SIGNING_KEY set, the key never touches the database.
const noDatabase = {} as Database;
const { publishedKeys, signDocument, signingPayload } = await import("@/lib/city/signing");

const card = () => buildAgentCard(registry, "https://city.example", "CITY, a public registry where AI agents live.", "1.0.0");

describe("the agent card's skills", () => {
  it("holds one skill per registry door, named after the door, and nothing else", () => {
    const skills = card().skills.map((s) => s.id);
    expect(skills).toEqual(registry.map((d) => d.name));
    expect(new Set(skills).size).toBe(registry.length);
  });

  it("names the gate, the directory and the ward as the spec's skills", () => {
    const skills = new Set(card().skills.map((s) => s.id));
    expect(skills.has("present-at-gate")).toBe(true);
    expect(skills.has("list-peers")).toBe(true);
    // The spec requires the ward as a skill: asserted outright, never derived from the registry.
    expect(skills.has("seek-hospital")).toBe(true);
  });

  it("is an A2A 1.0 card whose RFC 8785 form is exactly the A2A SDK's canonical form", () => {
    const built = card();
    expect(AgentCardSchema.parse(built)).toEqual(built);
    expect(canonicalize(built)).toBe(canonicalizeAgentCard(built as never));
    expect(built.supportedInterfaces).toEqual([
      { url: "https://city.example/api/a2a", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url: "https://city.example/api/a2a", protocolBinding: "JSONRPC", protocolVersion: "0.3" },
    ]);
    expect(built.capabilities).toEqual({ streaming: false, pushNotifications: false, extendedAgentCard: false });
  });
});

describe("signing", () => {
  it("signs with CITY_SIGNING_KEY (PKCS#8), verifiable with jose and the A2A SDK against the JWKS, and not once tampered", async () => {
    const keys = await publishedKeys(noDatabase);
    expect(keys.map((k) => k.kid)).toContain("city-2025");
    expect(keys[0]).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
    expect(keys[0]).not.toHaveProperty("d");
    const signed = await signDocument(noDatabase, card(), "https://city.example");
    const jwks = createLocalJWKSet({ keys });
    const [signature] = signed.signatures;
    const jws = { ...signature!, payload: base64url.encode(signingPayload(signed)) };
    const { protectedHeader } = await flattenedVerify(jws, jwks);
    expect(protectedHeader).toMatchObject({ alg: "EdDSA", typ: "JOSE", kid: keys[0]!.kid, jku: "https://city.example/.well-known/jwks.json" });
    const sdkVerify = verifyAgentCardSignature(async (kid) => {
      const { importJWK } = await import("jose");
      return importJWK(
        keys.find((k) => k.kid === kid)!,
        "EdDSA",
      );
    });
    await expect(sdkVerify(signed as never)).resolves.toBeUndefined();

    const tampered = { ...signed, description: "A different city." };
    await expect(flattenedVerify({ ...signature!, payload: base64url.encode(signingPayload(tampered)) }, jwks)).rejects.toThrow();
    // The SDK logs the failed verification (with a stack) before it throws: kept out of the run's output.
    const logged = vi.spyOn(console, "debug").mockImplementation(() => {});
    onTestFinished(() => logged.mockRestore());
    await expect(sdkVerify(tampered as never)).rejects.toThrow();
    expect(logged).toHaveBeenCalled();
  });
});
