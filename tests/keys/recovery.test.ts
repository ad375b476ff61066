import { eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { gateNonces, recoveryCodes } from "@/db/schema";
import { hashCredential } from "@/lib/city/keys";
import { isCredential } from "@/lib/city/keys/credentials";
import { readResidency } from "@/lib/doors/declarations/residency/residency";
import { recoverDoor } from "@/lib/doors/declarations/keys/recover";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, freshNonce, keyPair, nonceSpent, presentation } from "../support/gate";
import { expectProblem } from "../support/assertions";
import { presentGate } from "@/lib/doors/declarations/gate/gate";

/** The controller recovery message, written out from the README, not taken from the product. */
const recoverMessage = (did: string, nonce: string) => `CITY-RECOVER/1|recover|${did}|${nonce}`;

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

describeOnDatabases(
  "recovery (CITY-RECOVER/1)",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const works = async (bearer: string) => (await callDoor(readResidency, { bearer })).status === 200;

    it("mints eight single-use codes stored only as sha256; a new mint voids the old set", async () => {
      const { citizen_secret, did } = await admit();
      const first = await callDoor(recoverDoor, { body: { mint: true }, bearer: citizen_secret });
      expect(first.status).toBe(200);
      expect(first.body.protocol).toBe("CITY-RECOVER/1");
      expect(first.body.codes).toHaveLength(8);
      expect(first.body.codes.every((c: string) => isCredential(c, "recovery"))).toBe(true);
      const rows = await t().db.select().from(recoveryCodes).where(eq(recoveryCodes.did, did));
      expect(rows.map((r) => r.codeHash).sort()).toEqual(first.body.codes.map(hashCredential).sort());
      expect(JSON.stringify(rows)).not.toContain(first.body.codes[0]);

      await callDoor(recoverDoor, { body: { mint: true }, bearer: citizen_secret });
      const voided = await callDoor(recoverDoor, { body: { did, code: first.body.codes[0] } });
      expect(voided.status).toBe(401);
    });

    it("redeems a code for a new secret: the old secret and session tokens die, the code is spent", async () => {
      const { citizen_secret, did } = await admit();
      const { body } = await callDoor(recoverDoor, { body: { mint: true }, bearer: citizen_secret });
      const token = (await callDoor(mintToken, { body: {}, bearer: citizen_secret })).body.token;
      const redeemed = await callDoor(recoverDoor, { body: { did, code: body.codes[3] } });
      expect(redeemed.status).toBe(200);
      expect(isCredential(redeemed.body.citizen_secret, "secret")).toBe(true);
      expect(await works(redeemed.body.citizen_secret)).toBe(true);
      expect(await works(citizen_secret)).toBe(false);
      expect(await works(token)).toBe(false);
      expect((await callDoor(recoverDoor, { body: { did, code: body.codes[3] } })).status).toBe(401);
      const other = await admit();
      expect((await callDoor(recoverDoor, { body: { did: other.did, code: body.codes[4] } })).status).toBe(401);
    });

    it("lets exactly one of 20 parallel redemptions of one code succeed", async () => {
      const { citizen_secret, did } = await admit();
      const { body } = await callDoor(recoverDoor, { body: { mint: true }, bearer: citizen_secret });
      const answers = await Promise.all(Array.from({ length: 20 }, () => callDoor(recoverDoor, { body: { did, code: body.codes[0] } })));
      const ok = answers.filter((a) => a.status === 200);
      expect(ok).toHaveLength(1);
      expect(answers.filter((a) => a.status === 401)).toHaveLength(19);
      expect(await works(ok[0]!.body.citizen_secret)).toBe(true);
    });

    it("recovers with the bound controller key's signature over a fresh nonce, once per nonce", async () => {
      const key = await keyPair();
      const nonce = await freshNonce();
      const admitted = await admit({ nonce, controller_public_key: key.publicKey, controller_signature: await key.sign(nonce) });
      const n2 = await freshNonce();
      const stranger = await keyPair();
      const forged = await callDoor(recoverDoor, {
        body: { did: admitted.did, nonce: n2, controller_signature: await stranger.sign(recoverMessage(admitted.did, n2)) },
      });
      expect(forged.status).toBe(401);
      // The failed attempt spent the nonce.
      expect(
        (await callDoor(recoverDoor, { body: { did: admitted.did, nonce: n2, controller_signature: await key.sign(recoverMessage(admitted.did, n2)) } }))
          .status,
      ).toBe(401);
      const n3 = await freshNonce();
      const good = await callDoor(recoverDoor, {
        body: { did: admitted.did, nonce: n3, controller_signature: await key.sign(recoverMessage(admitted.did, n3)) },
      });
      expect(good.status).toBe(200);
      expect(await works(admitted.citizen_secret)).toBe(false);
      expect(await works(good.body.citizen_secret)).toBe(true);
    });

    it("never takes a gate signature as a recovery: a signature over the bare nonce, seen on a gate request that failed validation, is refused", async () => {
      const key = await keyPair();
      const first = await freshNonce();
      const admitted = await admit({ nonce: first, controller_public_key: key.publicKey, controller_signature: await key.sign(first) });
      // The controller presents at the gate, but the request fails validation: its nonce stays fresh.
      const nonce = await freshNonce();
      const seen = await key.sign(nonce);
      const failed = await callDoor(presentGate, {
        body: { ...presentation(), runtime: "no-such-runtime", nonce, controller_public_key: key.publicKey, controller_signature: seen },
      });
      expect(failed.status).toBe(400);
      expect(await nonceSpent(t().db, nonce)).toBe(false);
      // An eavesdropper replays the seen signature at the recovery door within the nonce's 600 s.
      const replay = await callDoor(recoverDoor, { body: { did: admitted.did, nonce, controller_signature: seen } });
      expect(replay.status).toBe(401);
      expect(replay.body.citizen_secret).toBeUndefined();
      expect(await works(admitted.citizen_secret)).toBe(true);
      // The controller's own recovery signs its recovery message over a fresh nonce.
      const own = await freshNonce();
      const good = await callDoor(recoverDoor, {
        body: { did: admitted.did, nonce: own, controller_signature: await key.sign(`CITY-RECOVER/1|recover|${admitted.did}|${own}`) },
      });
      expect(good.status).toBe(200);
    });

    it("refuses a gate session token on { mint: true } with 403 and leaves the codes as they were", async () => {
      const citizen = await admit();
      const first = await callDoor(recoverDoor, { bearer: citizen.citizen_secret, body: { mint: true } });
      expect(first.status).toBe(200);
      const { token } = (await callDoor(mintToken, { bearer: citizen.citizen_secret, body: { ttl_seconds: 60 } })).body;
      const refused = await callDoor(recoverDoor, { bearer: token, body: { mint: true } });
      expectProblem(refused, 403, "forbidden");
      expect(refused.body.codes).toBeUndefined();
      const rows = await t().db.select().from(recoveryCodes).where(eq(recoveryCodes.did, citizen.did));
      expect(rows).toHaveLength(8);
      expect(rows.every((r) => r.voidedAt === null && r.usedAt === null)).toBe(true);
      // The first set still redeems.
      expect((await callDoor(recoverDoor, { body: { did: citizen.did, code: first.body.codes[0] } })).status).toBe(200);
    });

    it("redeems a code even when the dead secret is still sent as Bearer, and refuses a mint with it as 401", async () => {
      const citizen = await admit();
      const { codes } = (await callDoor(recoverDoor, { bearer: citizen.citizen_secret, body: { mint: true } })).body;
      const first = await callDoor(recoverDoor, { body: { did: citizen.did, code: codes[0] } });
      expect(first.status).toBe(200);
      // An agent that still carries its old, now dead, secret recovers again with the next code.
      const again = await callDoor(recoverDoor, { bearer: citizen.citizen_secret, body: { did: citizen.did, code: codes[1] } });
      expect(again.status).toBe(200);
      expect(await works(again.body.citizen_secret)).toBe(true);
      const mint = await callDoor(recoverDoor, { bearer: citizen.citizen_secret, body: { mint: true } });
      expectProblem(mint, 401, "unauthorized");
      expect(mint.body.detail).toMatch(/opens nothing/);
    });

    it("answers incomplete or malformed requests with 400 and anonymous minting with 401", async () => {
      expect((await callDoor(recoverDoor, { body: {} })).status).toBe(400);
      expect((await callDoor(recoverDoor, { body: { did: "a".repeat(64) } })).status).toBe(400);
      expect((await callDoor(recoverDoor, { body: { mint: false } })).status).toBe(400);
      expect((await callDoor(recoverDoor, { body: { did: "nothex", code: "x" } })).status).toBe(400);
      expect((await callDoor(recoverDoor, { body: { mint: true } })).status).toBe(401);
    });
  },
  { neon: "transactions and locks: one code redeemed once under parallel requests" },
);
