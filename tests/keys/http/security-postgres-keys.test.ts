import { createHash, webcrypto } from "node:crypto";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../../support/limits";
import { presentation } from "../../support/gate";
import { type Answer, describeOnServer, usePostgresCity, useSecondInstance } from "../../support/postgres-city";
import { newKey, nowSeconds, type TestKey } from "../../support/signed";
import {
  controllerRecoveryMessage,
  keyHash,
  nextKeyOpenMessage,
  rawCall,
  type RawAnswer,
  rotationMessage,
  type SignedSend,
  signedCall,
  signFor,
} from "../../support/signed-http";

/*
 * Keys a thief cannot take (issue 41), through `next start` on PostgreSQL (node-postgres), two
 * instances where a race needs them. One test (or one describe) per finding of the review; each is
 * built on the contract settled for the fix (DESIGN.md sections 9 and 10, "Who outranks whom"):
 *
 *   A. ranks: code < secret < current controller key (a signed request) < committed next key
 *   B. a signature's age on arrival (30 s), and a rotated key refused at once on the key doors
 *   C. signed writes racing their citizen's export on two instances: none answered 200 and lost
 *   D. a recovery opened by a key the owner then withdrew never completes
 *   E. key events rated per citizen
 *   F. replays of signed MCP and A2A calls and of refused signed writes
 *   G. `@authority` compared with its port
 *   H. no deadlock between a code's redemption and a mint
 *   I. no hold on an exported citizen
 *   J. the key directory's answer signed for the authority the client asked (issue 45, item 7)
 */

const ENV = { CITY_DB_DRIVER: "pg", CITY_RECOVER_HOLDS_PER_ADDRESS_PER_DAY: "0" };

type Keyed = { did: string; citizen_secret: string; key: TestKey };

const PROBLEM = /^application\/problem\+json/;

/** A 4xx answer as RFC 9457 has it, with the city's code. */
function expectProblem(answer: Answer, status: number, code?: string) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(answer.type, JSON.stringify(answer.body)).toMatch(PROBLEM);
  if (code) expect(answer.body.code, JSON.stringify(answer.body)).toBe(code);
}

function expectOk(answer: Answer, what = "") {
  expect(answer.status, `${what} ${JSON.stringify(answer.body)}`).toBe(200);
}

describeOnServer("keys a thief cannot take: signed requests and the key lifecycle on `next start` over PostgreSQL (issue 41)", () => {
  const city = usePostgresCity("security-postgres-keys", ENV);
  const other = useSecondInstance(city, ENV);

  const base = () => city().server.baseUrl;
  /** The city's authority (CITY_BASE_URL's): what every signed request names, whichever instance it reaches. */
  const authority = () => new URL(base()).host;
  const q = (did: string) => `'${did.replace(/'/g, "")}'`;
  /** Until n backends wait on a lock (at most 10 s: a request that does not wait lets the test go on). */
  const waitForLockWaiters = async (n: number) => {
    for (let tries = 0; tries < 200 && (await city().lockWaiters()) < n; tries++) await new Promise((resolve) => setTimeout(resolve, 50));
  };

  /** A signed request to instance 1 (or 2), named as the city. */
  const signed = (key: TestKey, method: string, path: string, body?: unknown, options: SignedSend = {}, instance: 1 | 2 = 1) =>
    signedCall(instance === 1 ? base() : other().baseUrl, key, method, path, { ...(body === undefined ? {} : { body }), authority: authority(), ...options });

  async function gateNonce(): Promise<string> {
    const { body } = await city().get("/gate");
    expect(typeof body.nonce, JSON.stringify(body)).toBe("string");
    return body.nonce as string;
  }

  /** A citizen admitted with a controller key bound at its first admission. */
  async function admitKeyed(): Promise<Keyed> {
    const key = await newKey();
    const nonce = await gateNonce();
    const answer = await city().post("/gate", presentation({ nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) }));
    expect(answer.body.verdict, JSON.stringify(answer.body)).toBe("admitted");
    return { did: answer.body.did as string, citizen_secret: answer.body.citizen_secret as string, key };
  }

  /** POST /api/keys/rotate signed by `to` alone, from the controller `from` (null: none bound). */
  async function rotate(did: string, from: TestKey | null, to: TestKey, next: string[]): Promise<Answer> {
    const nonce = await gateNonce();
    const signature = await to.signHex(rotationMessage(did, from ? from.keyid : "none", to.keyid, nonce));
    return city().post("/api/keys/rotate", { did, nonce, public_key: to.publicKey, signature, next_key_hashes: next });
  }

  /** A committed next key opens a recovery. */
  async function openWithNextKey(did: string, key: TestKey): Promise<Answer> {
    const nonce = await gateNonce();
    return city().post("/api/recover", {
      did,
      nonce,
      next_public_key: key.publicKey,
      next_signature: await key.signHex(nextKeyOpenMessage(did, key.keyid, nonce)),
    });
  }

  /** The controller key's recovery (CITY-RECOVER/1). */
  async function controllerRecovery(did: string, key: TestKey): Promise<Answer> {
    const nonce = await gateNonce();
    return city().post("/api/recover", { did, nonce, controller_signature: await key.signHex(controllerRecoveryMessage(did, nonce)) });
  }

  const publicRecovery = async (did: string) => {
    const answer = await city().get(`/api/recover/${did}`);
    expectOk(answer, "GET /api/recover");
    return answer.body;
  };
  const delay = (did: string, hours: number, secret: string) => city().post("/api/keys/delay", { hours }, secret);
  const hashesOf = (did: string) => city().psql(`SELECT coalesce(array_to_string(next_key_hashes, ','), '-') FROM citizens WHERE did = ${q(did)}`);
  const controllerOf = (did: string) => city().psql(`SELECT coalesce(controller_public_key, '-') FROM citizens WHERE did = ${q(did)}`);
  const delayOf = async (did: string) => Number(await city().psql(`SELECT recovery_delay_hours FROM citizens WHERE did = ${q(did)}`));
  /** Every open step of the citizen: its window moved into the past, so only the rules can stop a completion. */
  const windowsPast = (did: string) => city().psql(`UPDATE recoveries SET opens_after = now() - interval '1 second' WHERE did = ${q(did)} AND state = 'open'`);
  const mint = async (secret: string) => {
    const answer = await city().post("/api/recover", { mint: true }, secret);
    expectOk(answer, "mint");
    return answer.body.codes as string[];
  };
  const openedTicket = (answer: Answer) => {
    expectOk(answer, "open");
    expect(answer.body.citizen_secret, "an open gives no secret").toBeUndefined();
    expect(answer.body.recovery, JSON.stringify(answer.body)).toMatchObject({ state: "open", ticket: expect.stringMatching(/^city_rt_/) });
    return answer.body.recovery.ticket as string;
  };
  /** A step's ticket completes nothing: a stale or unknown ticket (401) or a closed step (409). */
  const expectTicketDead = async (did: string, ticket: string) => {
    const answer = await city().post(`/api/recover/${did}/complete`, { ticket });
    expect([401, 409], `the ticket completed: ${JSON.stringify(answer.body)}`).toContain(answer.status);
    expect(answer.type).toMatch(PROBLEM);
    expect(answer.body.citizen_secret).toBeUndefined();
  };
  const noOpenStep = async (did: string) => {
    const { recovery } = await publicRecovery(did);
    expect(recovery?.state ?? "none", JSON.stringify(recovery)).not.toBe("open");
    expect(await city().count("recoveries", `did = ${q(did)} AND state = 'open'`), "open steps in the database").toBe(0);
  };

  describe("A. who outranks whom: code < secret < current key < committed next key", () => {
    it("A1 lets neither the secret nor the current key change a standing commitment (403), and commits as before where none stands", async () => {
      const me = await admitKeyed();
      const [n1, thief] = [await newKey(), await newKey()];
      expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(n1)] }, me.citizen_secret), "first commitment by the secret");
      const standing = await hashesOf(me.did);
      expect(standing).toBe(keyHash(n1));
      expectProblem(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(thief)] }, me.citizen_secret), 403, "forbidden");
      expectProblem(await city().post("/api/keys/commit", { next_key_hashes: [] }, me.citizen_secret), 403, "forbidden");
      expectProblem(await signed(me.key, "POST", "/api/keys/commit", { next_key_hashes: [keyHash(thief)] }), 403, "forbidden");
      expectProblem(await signed(me.key, "POST", "/api/keys/commit", { next_key_hashes: [] }), 403, "forbidden");
      expect(await hashesOf(me.did)).toBe(standing);
      expect((await publicRecovery(me.did)).pre_rotation).toBe(true);
      // With no commitment standing, a signed request commits as before.
      const fresh = await admitKeyed();
      const committed = await signed(fresh.key, "POST", "/api/keys/commit", { next_key_hashes: [keyHash(n1)] });
      expectOk(committed, "commitment by a signed request where none stands");
      expect(committed.body.next_key_hashes).toEqual([keyHash(n1)]);
    });

    it("A2 raises a delay at once, and holds a lowering for the standing delay, public, completed by its ticket only after opens_after", async () => {
      const me = await city().admit();
      const raised = await delay(me.did, 24, me.citizen_secret);
      expectOk(raised, "0 -> 24");
      expect(raised.body.delay_hours).toBe(24);
      const again = await delay(me.did, 48, me.citizen_secret);
      expect(again.body.delay_hours).toBe(48);
      const lowered = await delay(me.did, 24, me.citizen_secret);
      expectOk(lowered, "48 -> 24");
      expect(lowered.body.delay_hours, `a lowering applied at once: ${JSON.stringify(lowered.body)}`).toBe(48);
      expect(lowered.body.pending).toMatchObject({ step: "lower-delay", delay_hours: 24, ticket: expect.stringMatching(/^city_rt_/) });
      // A raise is never pending.
      for (const raise of [raised, again]) expect(raise.body.pending, JSON.stringify(raise.body)).toBeNull();
      const opensAfter = Date.parse(lowered.body.pending.opens_after as string);
      expect(Math.abs(opensAfter - (Date.parse(lowered.body.now_utc as string) + 48 * 3_600_000)), "opens_after = now + the standing 48 h").toBeLessThan(
        60_000,
      );
      expect(await delayOf(me.did)).toBe(48);
      const shown = await publicRecovery(me.did);
      expect(shown.delay_hours).toBe(48);
      expect(shown.recovery).toMatchObject({ state: "open", step: "lower-delay", via: "secret" });
      const early = await city().post(`/api/recover/${me.did}/complete`, { ticket: lowered.body.pending.ticket });
      expectProblem(early, 409);
      expect(await delayOf(me.did)).toBe(48);
      await windowsPast(me.did);
      const done = await city().post(`/api/recover/${me.did}/complete`, { ticket: lowered.body.pending.ticket });
      expectOk(done, "completion of the lowering");
      expect(done.body.delay_hours).toBe(24);
      expect(done.body.citizen_secret, "a lowering's completion issues no secret").toBeUndefined();
      expect((await publicRecovery(me.did)).delay_hours).toBe(24);
    });

    it("A3 opens a controller recovery (no secret) where a delay stands; gives a secret at once with none", async () => {
      const me = await admitKeyed();
      expectOk(await delay(me.did, 24, me.citizen_secret));
      const opened = await controllerRecovery(me.did, me.key);
      openedTicket(opened);
      expect(opened.body.recovery).toMatchObject({ opened_at: expect.any(String), opens_after: expect.any(String) });
      expect((await publicRecovery(me.did)).recovery).toMatchObject({ state: "open", step: "recovery", via: "controller" });
      expectOk(await city().get("/api/vault", me.citizen_secret), "the secret still opens the vault");
      const free = await admitKeyed();
      const now = await controllerRecovery(free.did, free.key);
      expectOk(now, "controller recovery with delay 0");
      expect(now.body.citizen_secret).toMatch(/^city_sk_/);
    });

    it("A4 lets a step be cancelled only by a caller that ranks at least with its opener", async () => {
      // Opened by a code: the secret cancels, and the key.
      const coded = await admitKeyed();
      expectOk(await delay(coded.did, 24, coded.citizen_secret));
      const codes = await mint(coded.citizen_secret);
      openedTicket(await city().post("/api/recover", { did: coded.did, code: codes[0] }));
      expectOk(await city().post(`/api/recover/${coded.did}/cancel`, {}, coded.citizen_secret), "the secret cancels a code's recovery");
      openedTicket(await city().post("/api/recover", { did: coded.did, code: codes[1] }));
      expectOk(await signed(coded.key, "POST", `/api/recover/${coded.did}/cancel`, {}), "the key cancels a code's recovery");

      // Opened by the secret (a lowering): the key cancels.
      const lowered = await admitKeyed();
      expectOk(await delay(lowered.did, 48, lowered.citizen_secret));
      const lowering = await delay(lowered.did, 24, lowered.citizen_secret);
      expect(lowering.body.pending, `the lowering did not wait: ${JSON.stringify(lowering.body)}`).toMatchObject({ step: "lower-delay" });
      expectOk(await signed(lowered.key, "POST", `/api/recover/${lowered.did}/cancel`, {}), "the key cancels the secret's lowering");
      expect(await publicRecovery(lowered.did)).toMatchObject({ delay_hours: 48, recovery: { state: "cancelled", step: "lower-delay" } });

      // Opened by the key: only a signed request cancels.
      const keyed = await admitKeyed();
      expectOk(await delay(keyed.did, 24, keyed.citizen_secret));
      openedTicket(await controllerRecovery(keyed.did, keyed.key));
      expectProblem(await city().post(`/api/recover/${keyed.did}/cancel`, {}, keyed.citizen_secret), 403, "forbidden");
      expect((await publicRecovery(keyed.did)).recovery).toMatchObject({ state: "open", via: "controller" });
      expectOk(await signed(keyed.key, "POST", `/api/recover/${keyed.did}/cancel`, {}), "the key cancels its own recovery");

      // Opened by a committed next key: neither the secret nor the current key.
      const nexted = await admitKeyed();
      const n1 = await newKey();
      expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(n1)] }, nexted.citizen_secret));
      expectOk(await delay(nexted.did, 24, nexted.citizen_secret));
      openedTicket(await openWithNextKey(nexted.did, n1));
      expectProblem(await city().post(`/api/recover/${nexted.did}/cancel`, {}, nexted.citizen_secret), 403, "forbidden");
      expectProblem(await signed(nexted.key, "POST", `/api/recover/${nexted.did}/cancel`, {}), 403, "forbidden");
      expect((await publicRecovery(nexted.did)).recovery).toMatchObject({ state: "open", via: "next-key" });
    });

    it("A5 cancels every open step with a committed key's rotation, and refuses a rotation that withdraws pre-rotation while a delay stands (409)", async () => {
      const me = await admitKeyed();
      const [n1, n2, n3] = [await newKey(), await newKey(), await newKey()];
      expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(n1)] }, me.citizen_secret));
      expectOk(await delay(me.did, 24, me.citizen_secret));
      const [code] = await mint(me.citizen_secret);
      openedTicket(await city().post("/api/recover", { did: me.did, code }));
      expectOk(await rotate(me.did, me.key, n1, [keyHash(n2)]), "rotation to n1");
      expect((await publicRecovery(me.did)).recovery, "the code's recovery after the rotation").toMatchObject({ state: "cancelled" });
      // A pending lowering too.
      const lowered = await delay(me.did, 0, me.citizen_secret);
      expect(lowered.body.pending, JSON.stringify(lowered.body)).toMatchObject({ step: "lower-delay" });
      expectOk(await rotate(me.did, n1, n2, [keyHash(n3)]), "rotation to n2");
      expect(await publicRecovery(me.did)).toMatchObject({ delay_hours: 24, recovery: { state: "cancelled", step: "lower-delay" } });
      await noOpenStep(me.did);
      // Withdrawing the commitment is a weakening: refused while the delay stands, nothing changed.
      expectProblem(await rotate(me.did, n2, n3, []), 409, "conflict");
      expect(await controllerOf(me.did)).toBe(n2.publicKey);
      expect(await hashesOf(me.did)).toBe(keyHash(n3));
    });

    it("A6 thief with the secret alone: sets nothing the owner's committed key cannot undo", async () => {
      const owner = await admitKeyed();
      const [n1, n2, thief, thief2] = [await newKey(), await newKey(), await newKey(), await newKey()];
      expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(n1)] }, owner.citizen_secret));
      expectOk(await delay(owner.did, 24, owner.citizen_secret));
      const secret = owner.citizen_secret;
      const tickets: string[] = [];
      // 1. delay 0: pending, not applied.
      const zero = await delay(owner.did, 0, secret);
      expectOk(zero, "delay 0");
      expect(zero.body.delay_hours, `the thief's delay 0 applied at once: ${JSON.stringify(zero.body)}`).toBe(24);
      expect(zero.body.pending).toMatchObject({ step: "lower-delay", delay_hours: 0 });
      tickets.push(zero.body.pending.ticket as string);
      // 2. its own commitment: 403.
      expectProblem(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(thief)] }, secret), 403, "forbidden");
      // 3. a rotation to its own key: 403.
      expectProblem(await rotate(owner.did, owner.key, thief, [keyHash(thief2)]), 403, "forbidden");
      // 4. codes: the secret outranks codes.
      const codes = await mint(secret);
      // 5. a code redeemed: a step is open already (409), or it opens a recovery (no secret).
      const redeemed = await city().post("/api/recover", { did: owner.did, code: codes[0] });
      if (redeemed.status === 200) tickets.push(openedTicket(redeemed));
      else expectProblem(redeemed, 409, "conflict");
      expect(await delayOf(owner.did)).toBe(24);
      // 6. the owner's committed key rotates: everything the thief opened is cancelled.
      expectOk(await rotate(owner.did, owner.key, n1, [keyHash(n2)]), "the owner's rotation");
      const after = await publicRecovery(owner.did);
      expect(after).toMatchObject({ delay_hours: 24, pre_rotation: true });
      expect(await hashesOf(owner.did)).toBe(keyHash(n2));
      await noOpenStep(owner.did);
      await windowsPast(owner.did);
      for (const ticket of tickets) await expectTicketDead(owner.did, ticket);
      expect(await delayOf(owner.did)).toBe(24);
      expect(await controllerOf(owner.did)).toBe(n1.publicKey);
    });

    it("A7 thief with the current key alone: opens only what the owner's committed key cancels, then its key opens nothing", async () => {
      const owner = await admitKeyed();
      const [n1, n2, thief] = [await newKey(), await newKey(), await newKey()];
      expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(n1)] }, owner.citizen_secret));
      expectOk(await delay(owner.did, 24, owner.citizen_secret));
      const stolen = owner.key;
      const tickets: string[] = [];
      // 1. its own commitment: 403.
      expectProblem(await signed(stolen, "POST", "/api/keys/commit", { next_key_hashes: [keyHash(thief)] }), 403, "forbidden");
      // 2. delay 0: pending.
      const zero = await signed(stolen, "POST", "/api/keys/delay", { hours: 0 });
      expectOk(zero, "signed delay 0");
      expect(zero.body.delay_hours, `the thief's delay 0 applied at once: ${JSON.stringify(zero.body)}`).toBe(24);
      expect(zero.body.pending).toMatchObject({ step: "lower-delay", delay_hours: 0 });
      tickets.push(zero.body.pending.ticket as string);
      expect((await publicRecovery(owner.did)).recovery).toMatchObject({ state: "open", step: "lower-delay", via: "controller" });
      // 3. a controller recovery: opened and pending (or refused while a step is open), never a secret.
      const recovered = await controllerRecovery(owner.did, stolen);
      if (recovered.status === 200) tickets.push(openedTicket(recovered));
      else expectProblem(recovered, 409, "conflict");
      // 4. a longer delay applies at once.
      const longer = await signed(stolen, "POST", "/api/keys/delay", { hours: 168 });
      expectOk(longer, "signed delay 168");
      expect(longer.body).toMatchObject({ delay_hours: 168, pending: null });
      // 5. the owner's committed key rotates: what the thief opened is cancelled.
      expectOk(await rotate(owner.did, stolen, n1, [keyHash(n2)]), "the owner's rotation");
      await noOpenStep(owner.did);
      await windowsPast(owner.did);
      for (const ticket of tickets) await expectTicketDead(owner.did, ticket);
      expect(await delayOf(owner.did)).toBe(168);
      expect(await controllerOf(owner.did)).toBe(n1.publicKey);
      // 6. the stolen key opens no door now.
      const doors: [string, string, unknown][] = [
        ["POST", "/api/vault", { content: "the thief's note" }],
        ["POST", "/api/keys/commit", { next_key_hashes: [keyHash(thief)] }],
        ["POST", "/api/keys/delay", { hours: 0 }],
        ["POST", `/api/recover/${owner.did}/cancel`, {}],
        ["POST", "/api/recover", { mint: true }],
        ["POST", "/api/tokens", {}],
        ["POST", "/api/leave", {}],
        ["POST", "/api/residency/export", {}],
      ];
      for (const [method, path, body] of doors) expectProblem(await signed(stolen, method, path, body), 401);
      expect(await city().psql(`SELECT residency_status FROM citizens WHERE did = ${q(owner.did)}`)).toBe("bound");
    });
  });

  describe("B. a signature's age on arrival, and a rotated key on the key doors", () => {
    it("B1 refuses a signature created more than 30 s before the city's clock (401 signature_expired), nothing changed", async () => {
      const me = await admitKeyed();
      const old = { created: nowSeconds() - 60, lifetimeSeconds: 300 };
      expectProblem(await signed(me.key, "POST", "/api/vault", { content: "backdated" }, { sign: old }), 401, "signature_expired");
      expectProblem(await signed(me.key, "POST", "/api/keys/commit", { next_key_hashes: [keyHash(await newKey())] }, { sign: old }), 401, "signature_expired");
      expect(await city().count("vault_notes", `did = ${q(me.did)}`)).toBe(0);
      expect(await hashesOf(me.did)).toBe("-");
    });

    it("B2 refuses the old key's signatures made before a rotation on every door that changes keys, recovery or residency (401 unknown_key); an ordinary write still within 30 s", async () => {
      const me = await admitKeyed();
      const [n1, n2] = [await newKey(), await newKey()];
      expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(n1)] }, me.citizen_secret));
      expectOk(await delay(me.did, 24, me.citizen_secret));
      const [code] = await mint(me.citizen_secret);
      openedTicket(await city().post("/api/recover", { did: me.did, code }));
      // Signed with the old key a few seconds before the rotation, sent right after it.
      const before = { created: nowSeconds() - 3 };
      const doors: [string, unknown][] = [
        ["/api/keys/commit", { next_key_hashes: [keyHash(await newKey())] }],
        ["/api/keys/delay", { hours: 48 }],
        [`/api/recover/${me.did}/cancel`, {}],
        ["/api/recover", { mint: true }],
        ["/api/tokens", {}],
        ["/api/leave", {}],
        ["/api/residency/export", {}],
      ];
      const made = await Promise.all(doors.map(([path, body]) => signFor(me.key, "POST", authority(), path, { body, sign: before })));
      const note = await signFor(me.key, "POST", authority(), "/api/vault", { body: { content: "signed before the rotation" }, sign: before });
      expectOk(await rotate(me.did, me.key, n1, [keyHash(n2)]), "rotation");
      expectOk(
        await signed(me.key, "POST", "/api/vault", { content: "signed before the rotation" }, { headers: note }),
        "an ordinary write signed before the rotation",
      );
      const answers: Record<string, string> = {};
      for (const [i, [path, body]] of doors.entries()) {
        const answer = await signed(me.key, "POST", path, body, { headers: made[i] });
        answers[path] = `${answer.status} ${answer.body.code ?? ""}`.trim();
        if (answer.status >= 400) expect(answer.type).toMatch(PROBLEM);
      }
      expect(answers, "each door's answer to the rotated key").toEqual(Object.fromEntries(doors.map(([path]) => [path, "401 unknown_key"])));
      expect(await city().psql(`SELECT residency_status || ',' || recovery_delay_hours FROM citizens WHERE did = ${q(me.did)}`)).toBe("bound,24");
      expect(await hashesOf(me.did)).toBe(keyHash(n2));
      expect(await city().count("recovery_codes", `did = ${q(me.did)}`), "codes minted (8 before the rotation)").toBe(8);
    });
  });

  it("C. loses no signed write racing its citizen's export on two instances: every 200 is in the export, every other write 401, nothing changed after", async () => {
    const ROUNDS = 4;
    for (let round = 0; round < ROUNDS; round++) {
      const me = await admitKeyed();
      const race = await city().race(8, (i) => {
        if (i === 0) return city().post("/api/residency/export", {}, me.citizen_secret);
        const instance = i % 2 ? 2 : 1;
        if (i === 7) return signed(me.key, "POST", "/api/keys/commit", { next_key_hashes: [keyHash(me.key)] }, {}, instance);
        return signed(me.key, "POST", "/api/vault", { content: `signed ${round} ${i}` }, {}, instance);
      });
      const exported = race.answers[0]!;
      expectOk(exported, "export");
      const notes = new Set((exported.body.vault as { content: string }[]).map((n) => n.content));
      const lost: string[] = [];
      race.answers.forEach((answer, i) => {
        if (i === 0) return;
        if (answer.status === 200) {
          if (i < 7 && !notes.has(`signed ${round} ${i}`)) lost.push(`vault write ${i}`);
        } else expectProblem(answer, 401);
      });
      expect(lost, `round ${round}: writes answered 200 but not in the export`).toEqual([]);
      expect(await city().count("vault_notes", `did = ${q(me.did)}`), `round ${round}: vault rows beside the export's`).toBe(notes.size);
      // The citizen's row is the export's: exported, its bed released. (The log row is now written by
      // the batch's integrator after the export's commit, so the row's xmin can no longer be matched
      // against the export row's to show that no commitment landed after it.)
      expect(await city().psql(`SELECT residency_status || ',' || coalesce(bed_id, '-') FROM citizens WHERE did = ${q(me.did)}`), `round ${round}`).toBe(
        "exported,-",
      );
      const committed = race.answers[7]!.status === 200;
      expect(await city().count("identity_log", `did = ${q(me.did)} AND event = 'next-keys-committed'`)).toBe(committed ? 1 : 0);
      expect(await hashesOf(me.did)).toBe(committed ? keyHash(me.key) : "-");
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }, 120_000);

  it("D. never completes a recovery opened by a key the owner then withdrew: the controller stays the rotation's", async () => {
    const me = await city().admit();
    const [n1, n2, n3] = [await newKey(), await newKey(), await newKey()];
    expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(n1), keyHash(n2)] }, me.citizen_secret));
    expectOk(await delay(me.did, 24, me.citizen_secret));
    const ticket = openedTicket(await openWithNextKey(me.did, n1));
    expectOk(await rotate(me.did, null, n2, [keyHash(n3)]), "n2's rotation");
    await city().psql(`UPDATE recoveries SET opens_after = now() - interval '1 second' WHERE did = ${q(me.did)}`);
    const done = await city().post(`/api/recover/${me.did}/complete`, { ticket });
    expect([401, 409], `n1's recovery completed after n1 was withdrawn: ${JSON.stringify(done.body)}`).toContain(done.status);
    expect(done.type).toMatch(PROBLEM);
    expect(await controllerOf(me.did)).toBe(n2.publicKey);
    expect(await hashesOf(me.did)).toBe(keyHash(n3));
  });

  it("E. rates one citizen's key events: 429 rate_limited after at most 20 in an hour, no identity log row for a refused one", async () => {
    const me = await city().admit();
    const before = await city().count("identity_log", `did = ${q(me.did)}`);
    const statuses: number[] = [];
    for (let hours = 24; hours < 24 + 26; hours++) {
      const answer = await delay(me.did, hours, me.citizen_secret);
      statuses.push(answer.status);
      if (answer.status !== 200) expectProblem(answer, 429, "rate_limited");
    }
    const accepted = statuses.filter((s) => s === 200).length;
    expect(accepted, `statuses: ${statuses.join(",")}`).toBeLessThanOrEqual(20);
    expect(statuses[0]).toBe(200);
    expect(statuses.indexOf(429), `statuses: ${statuses.join(",")}`).toBeGreaterThan(0);
    expect((await city().count("identity_log", `did = ${q(me.did)}`)) - before, "identity log rows the delays appended").toBe(accepted);
  });

  describe("F. replays", () => {
    it("F1 refuses a signed MCP call of a public tool sent again with the same signature (signature_replayed)", async () => {
      const me = await admitKeyed();
      const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "read-census", arguments: {} } };
      const extra = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-03-26" };
      const first = await signed(me.key, "POST", "/mcp", call, { extra });
      expectOk(first, "first MCP call");
      expect(mcpMessage(first).result?.isError ?? false, JSON.stringify(mcpMessage(first))).toBe(false);
      const again = await signed(me.key, "POST", "/mcp", call, { extra, headers: first.sent });
      expect(refusedAs(again), `the replay: ${again.status} ${JSON.stringify(again.body).slice(0, 400)}`).toBe("signature_replayed");
    });

    it("F2 refuses a replayed signed A2A message of a public skill, keeping one task for the signer", async () => {
      const me = await admitKeyed();
      const message = {
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: {
          message: { messageId: `m-${Math.random().toString(36).slice(2)}`, role: "ROLE_USER", parts: [{ text: JSON.stringify({ skill: "read-census" }) }] },
        },
      };
      const extra = { "a2a-version": "1.0" };
      const first = await signed(me.key, "POST", "/api/a2a", message, { extra });
      expectOk(first, "first A2A message");
      expect(first.body.result?.task, JSON.stringify(first.body).slice(0, 400)).toBeDefined();
      const again = await signed(me.key, "POST", "/api/a2a", message, { extra, headers: first.sent });
      expect(refusedAs(again), `the replay: ${again.status} ${JSON.stringify(again.body).slice(0, 400)}`).toBe("signature_replayed");
      const owner = createHash("sha256").update(`CITY-A2A-TASK/1|${me.did}`).digest("hex");
      expect(await city().count("a2a_tasks", `owner_hash = '${owner}'`), "tasks kept for the signer").toBe(1);
    });

    it("F3 spends a refused signed write's nonce: the same headers again are 401 signature_replayed", async () => {
      const me = await admitKeyed();
      // A cancel with nothing open: refused by the door (404).
      const cancel = await signed(me.key, "POST", `/api/recover/${me.did}/cancel`, {});
      expect([403, 404, 409], JSON.stringify(cancel.body)).toContain(cancel.status);
      expect(cancel.type).toMatch(PROBLEM);
      expectProblem(await signed(me.key, "POST", `/api/recover/${me.did}/cancel`, {}, { headers: cancel.sent }), 401, "signature_replayed");
      // A commitment while one stands: refused (403), then replayed.
      expectOk(await city().post("/api/keys/commit", { next_key_hashes: [keyHash(await newKey())] }, me.citizen_secret));
      const body = { next_key_hashes: [keyHash(await newKey())] };
      const commit = await signed(me.key, "POST", "/api/keys/commit", body);
      expectProblem(commit, 403, "forbidden");
      expectProblem(await signed(me.key, "POST", "/api/keys/commit", body, { headers: commit.sent }), 401, "signature_replayed");
    });
  });

  it("G. compares @authority with its port: signed for 127.0.0.1:<another port> 401, for localhost:<the city's port> accepted", async () => {
    const me = await admitKeyed();
    const port = new URL(base()).port;
    const elsewhere = `127.0.0.1:${Number(port) === 9999 ? 9998 : 9999}`;
    expectProblem(await signed(me.key, "GET", "/api/vault", undefined, { authority: elsewhere }), 401);
    expectProblem(await signed(me.key, "POST", "/api/vault", { content: "for another port" }, { authority: elsewhere }), 401);
    expect(await city().count("vault_notes", `did = ${q(me.did)}`)).toBe(0);
    expectOk(await signed(me.key, "GET", "/api/vault", undefined, { authority: `localhost:${port}` }), "signed for localhost:<port>");
    expectOk(await signed(me.key, "POST", "/api/vault", { content: "for localhost" }, { authority: `localhost:${port}` }), "signed write for localhost:<port>");
  });

  it(
    "H. deadlocks no code redemption against a mint (and key doors) for one citizen on two instances: never a 503",
    async () => {
      // The interleaving that deadlocked made to happen (no timer): a transaction of the test holds the
      // citizen's row; a signed mint is sent first and waits for it; then two redemptions of its codes
      // and two key doors, on both instances, until every one waits on a lock; then the row is let go.
      // The mint goes first: with one lock order (the citizen's row first) the redemptions wait behind
      // it; with a code's row taken before the citizen's, the mint and a redemption wait on each other.
      const ROUNDS = 3;
      const unavailable: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const me = await admitKeyed();
        const minted = await signed(me.key, "POST", "/api/recover", { mint: true });
        expectOk(minted, "signed mint");
        const codes = minted.body.codes as string[];
        const holder = new pg.Client({ connectionString: city().databaseEnv.DATABASE_URL });
        await holder.connect();
        let answers: Answer[];
        try {
          await holder.query("BEGIN");
          await holder.query("SELECT did FROM citizens WHERE did = $1 FOR UPDATE", [me.did]);
          const sent: Promise<Answer>[] = [signed(me.key, "POST", "/api/recover", { mint: true })];
          await waitForLockWaiters(1);
          sent.push(
            ...[0, 1].map((i) =>
              rawCall(i ? other().baseUrl : base(), "POST", "/api/recover", {
                body: JSON.stringify({ did: me.did, code: codes[i] }),
                headers: { "content-type": "application/json" },
              }),
            ),
            signed(me.key, "POST", "/api/keys/delay", { hours: 24 }, {}, 2),
            signed(me.key, "POST", "/api/keys/commit", { next_key_hashes: [keyHash(me.key)] }, {}, 1),
          );
          await waitForLockWaiters(5);
          await holder.query("COMMIT");
          answers = await Promise.all(sent);
        } finally {
          await holder.end();
        }
        for (const [i, answer] of answers!.entries()) {
          if (answer.status >= 500) unavailable.push(`round ${round}, request ${i}: ${answer.status} ${answer.body.detail ?? ""}`);
          else if (answer.status >= 400) expect(answer.type).toMatch(PROBLEM);
        }
      }
      expect(unavailable, "5xx answers (a deadlock is 503)").toEqual([]);
    },
    HEAVY_TEST_MS,
  );

  it(
    "I. refuses a hold on an exported citizen (404), and no hold racing the export lands after it",
    async () => {
      const me = await city().admit();
      expectOk(await delay(me.did, 24, me.citizen_secret));
      const [code] = await mint(me.citizen_secret);
      openedTicket(await city().post("/api/recover", { did: me.did, code }));
      expectOk(await city().post("/api/residency/export", {}, me.citizen_secret), "export");
      const rows = await city().count("identity_log", `did = ${q(me.did)}`);
      expectProblem(await city().post(`/api/recover/${me.did}/hold`, { reason: "suspected-theft" }), 404);
      expect(await city().count("identity_log", `did = ${q(me.did)}`), "identity log rows appended after the export").toBe(rows);

      const raced = await city().admit();
      expectOk(await delay(raced.did, 24, raced.citizen_secret));
      const [again] = await mint(raced.citizen_secret);
      openedTicket(await city().post("/api/recover", { did: raced.did, code: again }));
      // The race made to happen (no timer): a transaction of the test holds the open recovery's row,
      // the export and 4 holds (both instances) are sent at once, and the row is let go once every
      // request still running waits on a lock (or the export has answered and every hold waits).
      // Rows the identity log gains for the DID after the export answered were appended after the
      // export committed: a hold that landed on an exported citizen.
      const holder = new pg.Client({ connectionString: city().databaseEnv.DATABASE_URL });
      await holder.connect();
      let afterExport: number | undefined;
      let settled = 0;
      let holds: Answer[];
      let exported: Answer;
      try {
        await holder.query("BEGIN");
        await holder.query("SELECT id FROM recoveries WHERE did = $1 AND state = 'open' FOR UPDATE", [raced.did]);
        const exporting = city()
          .post("/api/residency/export", {}, raced.citizen_secret)
          .then(async (answer) => {
            afterExport = Number(await city().psql(`SELECT count(*) FROM identity_log WHERE did = ${q(raced.did)}`));
            return answer;
          });
        const holding = Array.from({ length: 4 }, (_, i) =>
          (i % 2
            ? rawCall(other().baseUrl, "POST", `/api/recover/${raced.did}/hold`, {
                body: JSON.stringify({ reason: "suspected-theft" }),
                headers: { "content-type": "application/json" },
              })
            : city().post(`/api/recover/${raced.did}/hold`, { reason: "verifying-owner" })
          ).finally(() => (settled += 1)),
        );
        for (let tries = 0; tries < 300; tries++) {
          const waiting = await city().lockWaiters();
          if (waiting >= 4 - settled + 1 || (afterExport !== undefined && waiting >= 4 - settled)) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await holder.query("COMMIT");
        [exported, ...holds] = await Promise.all([exporting, ...holding]);
      } finally {
        await holder.end();
      }
      expectOk(exported!, "raced export");
      for (const hold of holds!) if (hold.status !== 200) expect(hold.type).toMatch(PROBLEM);
      expect(holds!.every((h) => h.status < 500)).toBe(true);
      expect(afterExport, "the export's answer was seen").toBeDefined();
      expect(
        (await city().count("identity_log", `did = ${q(raced.did)}`)) - afterExport!,
        `identity log rows appended after the export answered (holds: ${holds!.map((h) => `${h.status} ${h.body.code ?? ""}`).join(", ")})`,
      ).toBe(0);
    },
    HEAVY_TEST_MS,
  );

  it("J. signs the key directory's answer for the authority the client asked (127.0.0.1 and localhost), verifiable with the city's JWKS", async () => {
    const me = await admitKeyed();
    const port = new URL(base()).port;
    const jwks = (await city().get("/.well-known/jwks.json")).body.keys as { kid?: string; x: string; crv: string; kty: string }[];
    const verified: Record<string, boolean> = {};
    for (const asked of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const answer = await rawCall(base(), "GET", `/api/peers/${me.did}/keys`, { headers: { host: asked } });
      expectOk(answer, `keys asked as ${asked}`);
      verified[asked] = await verifiesFor(answer, asked, jwks);
    }
    expect(verified, "the answer's signature verifies over the authority asked").toEqual({ [`127.0.0.1:${port}`]: true, [`localhost:${port}`]: true });
  });
});

/** The JSON-RPC message of an MCP answer, whether JSON or an event stream. */
function mcpMessage(answer: Answer): Record<string, any> {
  if (answer.type.includes("event-stream")) {
    const data = [...String(answer.body.text).matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, any>);
    return data.find((m) => "result" in m || "error" in m) ?? {};
  }
  return answer.body;
}

/**
 * The problem code a refused MCP or A2A call carries: a 401 problem document, a JSON-RPC error
 * whose data holds the problem, or an MCP tool result marked isError that names it; "accepted"
 * when the call ran.
 */
function refusedAs(answer: Answer): string {
  if (answer.status >= 400) {
    expect(answer.type).toMatch(PROBLEM);
    return String(answer.body.code);
  }
  const message = mcpMessage(answer);
  const text = JSON.stringify(message);
  if (message.error || message.result?.isError) {
    const code = /signature_[a-z]+|unknown_key/.exec(text);
    return code ? code[0] : `refused otherwise: ${text.slice(0, 200)}`;
  }
  return "accepted";
}

/** Whether the answer's RFC 9421 signature verifies, built over `authority`, with a key of the city's JWKS. */
async function verifiesFor(answer: RawAnswer, authority: string, jwks: { kid?: string; x: string; crv: string; kty: string }[]): Promise<boolean> {
  const input = answer.headers.get("signature-input") ?? "";
  const signature = answer.headers.get("signature") ?? "";
  const digest = answer.headers.get("content-digest") ?? "";
  const params = /^sig1=(\(.*)$/.exec(input)?.[1];
  const bytes = /^sig1=:([^:]+):$/.exec(signature)?.[1];
  expect(params, `Signature-Input: ${input}`).toBeDefined();
  expect(bytes, `Signature: ${signature}`).toBeDefined();
  expect(params).toContain('"@authority";req');
  expect(digest).toBe(`sha-256=:${createHash("sha256").update(answer.text).digest("base64")}:`);
  const components = /^\(([^)]*)\)/.exec(params!)![1]!.split(" ");
  const lines = components.map((c) => {
    if (c === '"@authority";req') return `${c}: ${authority}`;
    if (c === '"content-digest"') return `${c}: ${digest}`;
    throw new Error(`an unexpected covered component ${c}`);
  });
  const base = [...lines, `"@signature-params": ${params}`].join("\n");
  const keyid = /;keyid="([^"]+)"/.exec(params!)?.[1];
  const jwk = jwks.find((k) => k.kid === keyid) ?? jwks[0]!;
  const key = await webcrypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
  return webcrypto.subtle.verify("Ed25519", key, Buffer.from(bytes!, "base64"), new TextEncoder().encode(base));
}
