import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, proveChallenges } from "@/db/schema";
import { didKeyOf } from "@/lib/city/keys/keys";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { readResidency } from "@/lib/doors/declarations/residency/residency";
import { readChallenge, submitProof } from "@/lib/doors/declarations/restriction/tiers";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, keyPair } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

// The order of the Ed25519 group: a signature whose S is S + L is the same proof, non-canonically encoded.
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

function nonCanonical(signatureHex: string): string | null {
  const bytes = hexToBytes(signatureHex);
  const s = BigInt(`0x${bytesToHex(bytes.slice(32).reverse())}`) + L;
  if (s >= 2n ** 256n) return null;
  const sBytes = hexToBytes(s.toString(16).padStart(64, "0")).reverse();
  return bytesToHex(bytes.slice(0, 32)) + bytesToHex(sBytes);
}

describeOnDatabases("key proof (CITY-PROVE/1)", (t) => {
  beforeAll(() => useDatabase(t().db));

  async function challengeFor(secret: string) {
    const { status, body } = await callDoor(readChallenge, { bearer: secret });
    expect(status).toBe(200);
    return body as { challenge: string; message: string };
  }
  const peerOf = async (did: string) =>
    (await callDoor(readPeers, { query: "?limit=500" })).body.peers.find((p: { fingerprint: string }) => p.fingerprint === did);

  it("raises a citizen to proven with a valid proof and publishes proven_did only then", async () => {
    const citizen = await admit();
    const key = await keyPair();
    expect(await peerOf(citizen.did)).toMatchObject({ proven_did: null, proven_method: null });
    const { challenge, message } = await challengeFor(citizen.citizen_secret);
    expect(message).toBe(`CITY-PROVE/1|${citizen.did}|${challenge}`);
    const { status, body } = await callDoor(submitProof, {
      body: { public_key: key.publicKey, signature: await key.sign(message), challenge },
      bearer: citizen.citizen_secret,
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ tier: "proven", proven_did: didKeyOf(key.publicKey), proven_method: "ed25519" });
    expect(body.proven_did).toMatch(/^did:key:z6Mk/);
    expect(await peerOf(citizen.did)).toMatchObject({ proven_did: body.proven_did, proven_method: "ed25519" });
    expect((await callDoor(readResidency, { bearer: citizen.citizen_secret })).body.status.tier).toBe("proven");
  });

  it("refuses a tampered proof, spends the challenge, and publishes nothing", async () => {
    const citizen = await admit();
    const key = await keyPair();
    const { challenge, message } = await challengeFor(citizen.citizen_secret);
    const signature = await key.sign(message);
    const tampered = (signature.startsWith("0") ? "1" : "0") + signature.slice(1);
    const refused = await callDoor(submitProof, { body: { public_key: key.publicKey, signature: tampered, challenge }, bearer: citizen.citizen_secret });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe("proof_invalid");
    // Replaying the spent challenge with a good signature fails too.
    const replay = await callDoor(submitProof, { body: { public_key: key.publicKey, signature, challenge }, bearer: citizen.citizen_secret });
    expect(replay.status).toBe(422);
    expect(await peerOf(citizen.did)).toMatchObject({ proven_did: null });
    const [row] = await t().db.select().from(citizens).where(eq(citizens.did, citizen.did));
    expect(row!.tier).toBe("citizen");
  });

  it("refuses a replayed proof after success, an expired challenge, and another citizen's challenge", async () => {
    const a = await admit();
    const b = await admit();
    const key = await keyPair();
    const first = await challengeFor(a.citizen_secret);
    const proof = { public_key: key.publicKey, signature: await key.sign(first.message), challenge: first.challenge };
    expect((await callDoor(submitProof, { body: proof, bearer: a.citizen_secret })).status).toBe(200);
    expect((await callDoor(submitProof, { body: proof, bearer: a.citizen_secret })).status).toBe(422);

    const stale = await challengeFor(b.citizen_secret);
    await t()
      .db.update(proveChallenges)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(proveChallenges.challenge, stale.challenge));
    expect(
      (
        await callDoor(submitProof, {
          body: { public_key: key.publicKey, signature: await key.sign(stale.message), challenge: stale.challenge },
          bearer: b.citizen_secret,
        })
      ).status,
    ).toBe(422);

    const theirs = await challengeFor(a.citizen_secret);
    const message = `CITY-PROVE/1|${b.did}|${theirs.challenge}`;
    expect(
      (
        await callDoor(submitProof, {
          body: { public_key: key.publicKey, signature: await key.sign(message), challenge: theirs.challenge },
          bearer: b.citizen_secret,
        })
      ).status,
    ).toBe(422);
  });

  it("refuses known weak vectors: a small-order key and a non-canonical signature", async () => {
    const citizen = await admit();
    // The identity point is a small-order key; R = identity, S = 0 "verifies" any message under ZIP-215.
    const identity = "01" + "00".repeat(31);
    const c1 = await challengeFor(citizen.citizen_secret);
    const weak = await callDoor(submitProof, {
      body: { public_key: identity, signature: identity + "00".repeat(32), challenge: c1.challenge },
      bearer: citizen.citizen_secret,
    });
    expect(weak.status).toBe(422);

    const key = await keyPair();
    let forged: string | null = null;
    let challenge = "";
    while (!forged) {
      const c = await challengeFor(citizen.citizen_secret);
      challenge = c.challenge;
      forged = nonCanonical(await key.sign(c.message));
    }
    const refused = await callDoor(submitProof, { body: { public_key: key.publicKey, signature: forged, challenge }, bearer: citizen.citizen_secret });
    expect(refused.status).toBe(422);
  });

  it("answers malformed proofs with 400 and anonymous callers with 401", async () => {
    const citizen = await admit();
    expect((await callDoor(submitProof, { body: { public_key: "xyz", signature: "00", challenge: "00" }, bearer: citizen.citizen_secret })).status).toBe(400);
    expect((await callDoor(readChallenge)).status).toBe(401);
    expect((await callDoor(submitProof, { body: {} })).status).toBe(401);
  });

  it("sweeps expired challenges whenever one is issued, so GET /api/prove cannot grow the table", async () => {
    const citizen = await admit();
    const old = "d".repeat(32);
    await t()
      .db.insert(proveChallenges)
      .values({ challenge: old, did: citizen.did, expiresAt: new Date(Date.now() - 1000) });
    const { body } = await callDoor(readChallenge, { bearer: citizen.citizen_secret });
    expect(await t().db.select().from(proveChallenges).where(eq(proveChallenges.challenge, old))).toHaveLength(0);
    expect(await t().db.select().from(proveChallenges).where(eq(proveChallenges.challenge, body.challenge))).toHaveLength(1);
  });
});
