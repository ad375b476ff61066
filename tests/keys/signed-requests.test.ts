import { createHash, createPublicKey, verify } from "node:crypto";
import { count, eq, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { citizens, signatureNonces, vaultNotes } from "@/db/schema";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { forgetEnv } from "@/lib/env";
import { jwkThumbprint } from "@/lib/city/keys";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { readJwks } from "@/lib/doors/surfaces/discovery";
import { readPeerKeys, readPeers } from "@/lib/doors/declarations/directory/peers";
import { exportResidency, readResidency } from "@/lib/doors/declarations/residency/residency";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { readVault, writeVault } from "@/lib/doors/declarations/shelves/vault";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, freshNonce, presentation } from "../support/gate";
import { admitWithKey, callSigned, newKey, nowSeconds, rotateAtGate, signComponents, signFor, type TestKey, urlOf } from "../support/signed";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/** A refusal of a signed request: its problem, and Accept-Signature naming what a signature must cover. */
function expectRefused(answer: { status: number; headers: Headers; body: unknown }, status: number, code: string) {
  const problem = expectProblem(answer, status, code);
  const accept = answer.headers.get("accept-signature");
  expect(accept, "Accept-Signature").toMatch(/^sig1=\("@method" "@authority" "@path"/);
  expect(accept).toContain(";created;expires;keyid");
  return problem;
}

describeOnDatabases(
  "requests signed with the citizen's own key (CITY-SIG/1)",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const notesOf = async (did: string) => (await t().db.select({ n: count() }).from(vaultNotes).where(eq(vaultNotes.did, did)))[0]!.n;
    const nonces = async () => (await t().db.select({ n: count() }).from(signatureNonces))[0]!.n;

    it("computes a key's thumbprint in the database as the code does (the request_keys trigger)", async () => {
      const me = await admitWithKey();
      const [row] = rowsOf<{ thumbprint: string; exp: unknown }>(await t().db.execute(sql`SELECT thumbprint, exp FROM request_keys WHERE did = ${me.did}`));
      expect(row).toEqual({ thumbprint: me.key.keyid, exp: null });
      expect(jwkThumbprint(me.key.publicKey)).toBe(me.key.keyid);
    });

    it("does with a signature what the secret does: a write, a read, minting a token, an export", async () => {
      const me = await admitWithKey();
      const wrote = await callSigned(writeVault, me.key, { body: { content: "signed, not sent a secret" } });
      expect(wrote.status, JSON.stringify(wrote.body)).toBe(200);
      expect(await notesOf(me.did)).toBe(1);
      const read = await callSigned(readVault, me.key);
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).toContain("signed, not sent a secret");
      const status = await callSigned(readResidency, me.key, { query: "?view=full" });
      expect(status.status, JSON.stringify(status.body)).toBe(200);
      // Minting a session token is refused to a session token, and open to a signature.
      const token = await callSigned(mintToken, me.key, { body: {} });
      expect(token.status, JSON.stringify(token.body)).toBeLessThan(300);
      expect(token.body.token).toMatch(/^city_st_/);
      const exported = await callSigned(exportResidency, me.key, { body: {} });
      expect(exported.status, JSON.stringify(exported.body).slice(0, 300)).toBe(200);
      expect(JSON.stringify(exported.body)).toContain("signed, not sent a secret");
      // Exported and gone: the key opens nothing now.
      expectRefused(await callSigned(writeVault, me.key, { body: { content: "after" } }), 401, "unknown_key");
    });

    it("refuses a replayed nonce, and the replay changes nothing", async () => {
      const me = await admitWithKey();
      const body = { content: "once" };
      const first = await callSigned(writeVault, me.key, { body });
      expect(first.status).toBe(200);
      const again = await callSigned(writeVault, me.key, { body, headers: first.sent });
      expectRefused(again, 401, "signature_replayed");
      // The same nonce in a new signature (a new created) is refused too: single use per key.
      const nonce = /nonce="([^"]+)"/.exec(first.sent["signature-input"]!)![1]!;
      expectRefused(await callSigned(writeVault, me.key, { body, sign: { nonce, created: nowSeconds() - 1 } }), 401, "signature_replayed");
      expect(await notesOf(me.did)).toBe(1);
    });

    it("refuses an expired signature, one created in the future, one living longer than 300 s and one reaching the city over 30 s after it was made", async () => {
      const me = await admitWithKey();
      const before = await nonces();
      // Within its expires, but made 40 s ago: a signature's age on arrival is bounded (30 s), so a
      // key rotated away cannot have made one that still lands.
      const aged = await callSigned(writeVault, me.key, { body: { content: "x" }, sign: { created: nowSeconds() - 40, lifetimeSeconds: 300 } });
      expect(expectRefused(aged, 401, "signature_expired").detail).toContain("within 30 s");
      expectRefused(
        await callSigned(writeVault, me.key, { body: { content: "x" }, sign: { created: nowSeconds() - 400, lifetimeSeconds: 300 } }),
        401,
        "signature_expired",
      );
      expectRefused(await callSigned(writeVault, me.key, { body: { content: "x" }, sign: { created: nowSeconds() + 60 } }), 401, "signature_expired");
      const long = await signComponents(
        me.key,
        [
          ["@method", "POST"],
          ["@authority", "city.test"],
          ["@path", "/api/vault"],
          ["content-digest", ""],
        ],
        [
          ["created", nowSeconds()],
          ["expires", nowSeconds() + 301],
          ["keyid", me.key.keyid],
          ["nonce", "n".repeat(16)],
        ],
      );
      expect(long["signature-input"]).toContain("expires=");
      expectRefused(await callSigned(writeVault, me.key, { body: { content: "x" }, headers: long }), 401, "signature_invalid");
      expect(await notesOf(me.did)).toBe(0);
      expect(await nonces()).toBe(before);
      // 25 s old is still taken.
      expect((await callSigned(writeVault, me.key, { body: { content: "young" }, sign: { created: nowSeconds() - 25, lifetimeSeconds: 300 } })).status).toBe(
        200,
      );
      expect(await notesOf(me.did)).toBe(1);
    });

    it("refuses a tampered body, a changed path or authority, and a component left unsigned", async () => {
      const me = await admitWithKey();
      const body = { content: "as signed" };
      expectRefused(
        await callSigned(writeVault, me.key, { body, tamper: (r) => void (r.body = JSON.stringify({ content: "changed" })) }),
        401,
        "signature_invalid",
      );
      // The digest made again over the changed body: the signature no longer covers it.
      const digest = (await signComponents(me.key, [], [], JSON.stringify({ content: "changed" })))["content-digest"]!;
      expectRefused(
        await callSigned(writeVault, me.key, {
          body,
          tamper: (r) => void ((r.body = JSON.stringify({ content: "changed" })), (r.headers["content-digest"] = digest)),
        }),
        401,
        "signature_invalid",
      );
      expectRefused(await callSigned(writeVault, me.key, { body, signedUrl: "http://city.test/api/plaza" }), 401, "signature_invalid");
      expectRefused(await callSigned(writeVault, me.key, { body, signedUrl: "http://elsewhere.test/api/vault" }), 401, "signature_invalid");
      // Signed for another service and sent here with that service's Host: not an authority of the city's.
      expectRefused(
        await callSigned(writeVault, me.key, { body, signedUrl: "http://elsewhere.test/api/vault", tamper: (r) => void (r.headers.host = "elsewhere.test") }),
        401,
        "signature_invalid",
      );
      // The Host the client addressed is the authority (RFC 9421 2.2.3), wherever the server sees the URL.
      expect(
        (
          await callSigned(writeVault, me.key, {
            body: { content: "by Host" },
            signedUrl: "http://localhost:3000/api/vault",
            tamper: (r) => void (r.headers.host = "localhost:3000"),
          })
        ).status,
      ).toBe(200);
      expectRefused(await callSigned(readVault, me.key, { signedUrl: urlOf(readVault), query: "?limit=1" }), 401, "signature_invalid");
      // A public city does not answer as the loopback names: a request signed for a city on the
      // signer's own machine (same key) is not replayed here by sending its Host.
      const signedLocally = () =>
        callSigned(writeVault, me.key, {
          body: { content: "local" },
          signedUrl: "http://localhost:3000/api/vault",
          tamper: (r) => void (r.headers.host = "localhost:3000"),
        });
      const baseUrl = process.env.CITY_BASE_URL;
      process.env.CITY_BASE_URL = "https://city.example";
      forgetEnv();
      try {
        expectRefused(await signedLocally(), 401, "signature_invalid");
      } finally {
        if (baseUrl === undefined) delete process.env.CITY_BASE_URL;
        else process.env.CITY_BASE_URL = baseUrl;
        forgetEnv();
      }
      expect((await signedLocally()).status).toBe(200);
      // Signed without the digest (and without @authority): refused, whatever the signature.
      const text = JSON.stringify(body);
      const created = nowSeconds();
      const params: [string, number | string][] = [
        ["created", created],
        ["expires", created + 60],
        ["keyid", me.key.keyid],
        ["nonce", "a-nonce-of-16-chars"],
      ];
      const noDigest = await signComponents(
        me.key,
        [
          ["@method", "POST"],
          ["@authority", "city.test"],
          ["@path", "/api/vault"],
        ],
        params,
        text,
      );
      const problem = expectRefused(await callSigned(writeVault, me.key, { body, headers: noDigest }), 401, "signature_invalid");
      expect(problem.detail).toContain('"content-digest"');
      const noAuthority = await signComponents(
        me.key,
        [
          ["@method", "POST"],
          ["@path", "/api/vault"],
          ["content-digest", `sha-256=:${Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))).toString("base64")}:`],
        ],
        params,
        text,
      );
      expect(expectRefused(await callSigned(writeVault, me.key, { body, headers: noAuthority }), 401, "signature_invalid").detail).toContain('"@authority"');
      // A write without a nonce.
      const noNonce = await signComponents(
        me.key,
        [
          ["@method", "POST"],
          ["@authority", "city.test"],
          ["@path", "/api/vault"],
          ["content-digest", noDigest["content-digest"]!],
        ],
        params.slice(0, 3),
        text,
      );
      expectRefused(await callSigned(writeVault, me.key, { body, headers: noNonce }), 401, "signature_invalid");
      // "by Host" and "local" (on a loopback city) only.
      expect(await notesOf(me.did)).toBe(2);
    });

    it("refuses an unknown key and a request with both credentials", async () => {
      const me = await admitWithKey();
      expectRefused(await callSigned(writeVault, await newKey(), { body: { content: "x" } }), 401, "unknown_key");
      expectRefused(
        await callSigned(writeVault, me.key, { body: { content: "x" }, extra: { authorization: `Bearer ${me.citizen_secret}` } }),
        400,
        "credential_conflict",
      );
      expect(await notesOf(me.did)).toBe(0);
    });

    it("after a rotation refuses the old key's new signatures, accepts one made before it until it expires, and signs with the new key", async () => {
      const name = presentation().name;
      const me = await admitWithKey({ name });
      const next = await newKey();
      // Signed before the rotation (in a second over before it: one stamped with the rotation's own second is refused), sent after it.
      const early = await signFor(writeVault, me.key, { body: { content: "signed before" }, sign: { created: nowSeconds() - 1 } });
      const rotated = await rotateAtGate(me, name, next);
      expect(rotated.body.verdict, JSON.stringify(rotated.body)).toBe("admitted");
      expect((await t().db.select({ key: citizens.controllerPublicKey }).from(citizens).where(eq(citizens.did, me.did)))[0]!.key).toBe(next.publicKey);
      // Made after the rotation (created is in whole seconds: 2 s ahead, within the 5 s allowed, is surely after it).
      expectRefused(await callSigned(writeVault, me.key, { body: { content: "after" }, sign: { created: nowSeconds() + 2 } }), 401, "unknown_key");
      expect((await callSigned(writeVault, me.key, { body: { content: "signed before" }, headers: early })).status).toBe(200);
      expect((await callSigned(writeVault, next, { body: { content: "new key" } })).status).toBe(200);
      // Once the old key's exp has passed, nothing it signed is accepted.
      await t().db.execute(sql`UPDATE request_keys SET exp = now() - interval '1 second' WHERE did = ${me.did} AND thumbprint = ${me.key.keyid}`);
      const late = await signFor(writeVault, me.key, { body: { content: "x" }, sign: { created: nowSeconds() - 20 } });
      expectRefused(await callSigned(writeVault, me.key, { body: { content: "x" }, headers: late }), 401, "unknown_key");
      expect(await notesOf(me.did)).toBe(2);
    });

    it("publishes a citizen's keys as a JWK Set signed by the city, the rotated-away key with exp, and its thumbprint on the directory row", async () => {
      const name = presentation().name;
      const me = await admitWithKey({ name });
      const keysOf = () => callDoor(readPeerKeys, { params: { did: me.did } });
      const before = await keysOf();
      expect(before.status).toBe(200);
      expect(before.headers.get("content-type")).toMatch(/^application\/jwk-set\+json/);
      expect(before.body.keys).toEqual([
        {
          kty: "OKP",
          crv: "Ed25519",
          x: Buffer.from(me.key.publicKey, "hex").toString("base64url"),
          kid: me.key.keyid,
          use: "sig",
          alg: "EdDSA",
          nbf: expect.any(Number),
        },
      ]);
      const row = (await callDoor(readPeers, { query: `?q=${encodeURIComponent(name)}` })).body.peers.find(
        (p: { fingerprint: string }) => p.fingerprint === me.did,
      );
      expect(row.key_thumbprint).toBe(me.key.keyid);
      const plain = await admit({ name: `${name}-plain` });
      expect((await callDoor(readPeerKeys, { params: { did: plain.did } })).body.keys).toEqual([]);
      expect((await callDoor(readPeers, { query: `?q=${encodeURIComponent(`${name}-plain`)}` })).body.peers[0].key_thumbprint).toBeNull();
      expectProblem(await callDoor(readPeerKeys, { params: { did: "0".repeat(64) } }), 404, "not_found");

      const next = await newKey();
      const rotated = await rotateAtGate(me, name, next);
      expect(rotated.body.verdict).toBe("admitted");
      const after = await keysOf();
      expect(after.body.keys.map((k: { kid: string }) => k.kid)).toEqual([next.keyid, me.key.keyid]);
      const old = after.body.keys[1];
      // Kept 35 s after the rotation: a signature reaches the city at most 30 s after it was made, 5 s of skew.
      expect(old.exp - Math.floor(Date.now() / 1000)).toBeGreaterThan(25);
      expect(old.exp - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(36);
      expect(after.body.keys[0].exp).toBeUndefined();

      // The city's signature over the answer, checked by hand (not with the library the city signs
      // with): the signature base of RFC 9421 over "@authority";req and content-digest, and the key
      // of /.well-known/jwks.json.
      const text = JSON.stringify(after.body);
      const digest = after.headers.get("content-digest")!;
      expect(digest).toBe(`sha-256=:${createHash("sha256").update(text).digest("base64")}:`);
      const input = after.headers.get("signature-input")!;
      expect(input).toMatch(
        /^sig1=\("@authority";req "content-digest"\);created=\d+;expires=\d+;keyid="[^"]+";alg="ed25519";tag="http-message-signatures-directory"$/,
      );
      const jwks = (await callDoor(readJwks)).body.keys[0];
      expect(input).toContain(`keyid="${jwks.kid}"`);
      const params = input.slice("sig1=".length);
      const base = `"@authority";req: city.test\n"content-digest": ${digest}\n"@signature-params": ${params}`;
      const signature = Buffer.from(/^sig1=:([^:]+):$/.exec(after.headers.get("signature")!)![1]!, "base64");
      const cityKey = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwks.x }, format: "jwk" });
      expect(verify(null, Buffer.from(base), cityKey, signature)).toBe(true);
      expect(verify(null, Buffer.from(base.replace("city.test", "elsewhere.test")), cityKey, signature)).toBe(false);
    });

    it("binds a key after admission (with the secret, at the gate, as before) and then takes its signatures", async () => {
      const name = presentation().name;
      const plain = await admit({ name });
      const key = await newKey();
      expectRefused(await callSigned(writeVault, key, { body: { content: "not yet" } }), 401, "unknown_key");
      const nonce = await freshNonce();
      const bound = await callDoor(presentGate, {
        bearer: plain.citizen_secret,
        body: presentation({ name, nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) }),
      });
      expect(bound.body.verdict, JSON.stringify(bound.body)).toBe("admitted");
      expect((await callDoor(readPeerKeys, { params: { did: plain.did } })).body.keys.map((k: { kid: string }) => k.kid)).toEqual([key.keyid]);
      expect((await callSigned(writeVault, key, { body: { content: "bound later" } })).status).toBe(200);
      expect(await notesOf(plain.did)).toBe(1);
    });

    it("records a signed poll's nonce too (a write with its own transactions)", async () => {
      const me = await admitWithKey();
      const poll = await callSigned(liveDoor, me.key, { body: { action: "return" } });
      expect(poll.status, JSON.stringify(poll.body)).toBe(200);
      expectRefused(await callSigned(liveDoor, me.key, { body: { action: "return" }, headers: poll.sent }), 401, "signature_replayed");
    });

    it("stores the same signed write sent twice at once only once", async () => {
      const me = await admitWithKey();
      const headers = await signFor(writeVault, me.key, { body: { content: "raced" } });
      const answers = await Promise.all([0, 1, 2].map(() => callSigned(writeVault, me.key, { body: { content: "raced" }, headers })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401]);
      for (const a of answers.filter((a) => a.status === 401)) expectRefused(a, 401, "signature_replayed");
      expect(await notesOf(me.did)).toBe(1);
    });

    it("keeps a nonce only while a signature carrying it can land, sweeps expired ones, and counts signed writes per key, never city-wide", async () => {
      const me = await admitWithKey();
      await t().db.execute(
        sql`INSERT INTO signature_nonces (keyid, nonce, expires_at) SELECT 'old-key', 'expired-nonce-' || g, now() - interval '1 minute' FROM generate_series(1, 40) g`,
      );
      const signedAt = nowSeconds();
      expect((await callSigned(writeVault, me.key, { body: { content: "sweeps" }, sign: { created: signedAt, lifetimeSeconds: 300 } })).status).toBe(200);
      const left = rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM signature_nonces WHERE keyid = 'old-key'`))[0]!.n;
      expect(left).toBe(8);
      // Kept 31 s after created and 5 s of skew, not until expires (300 s): after that the age bound refuses a replay anyway.
      const [kept] = rowsOf<{ expires_at: string | Date }>(await t().db.execute(sql`SELECT expires_at FROM signature_nonces WHERE keyid = ${me.key.keyid}`));
      expect(new Date(kept!.expires_at).getTime() / 1000).toBe(signedAt + 36);
      // A key at its own rate: refused 429, nothing stored, no nonce kept; another key is not slowed.
      await t().db.execute(sql`UPDATE request_keys SET nonce_tat = now() + interval '60 seconds' WHERE thumbprint = ${me.key.keyid}`);
      const count = await nonces();
      const refused = expectProblem(await callSigned(writeVault, me.key, { body: { content: "too many" } }), 429, "rate_limited");
      expect(refused.limit).toMatchObject({ name: "signed writes per key", limit: 240, window_seconds: 60 });
      expect(await nonces()).toBe(count);
      expect(await notesOf(me.did)).toBe(1);
      const other = await admitWithKey();
      expect((await callSigned(writeVault, other.key, { body: { content: "mine" } })).status).toBe(200);
      await t().db.execute(sql`DELETE FROM signature_nonces WHERE keyid = 'old-key'`);
    });
  },
  { neon: "a race of one signed write through the pool, its nonce recorded under the citizen's row lock" },
);
