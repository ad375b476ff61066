import { createHash } from "node:crypto";
import { desc, eq } from "drizzle-orm";
import { hexToBytes } from "@noble/hashes/utils.js";
import { beforeAll, describe, expect, it } from "vitest";
import { citizens, gateNonces, identityLog as identityLogRows, recoveries, recoveryCodes, requestKeys } from "@/db/schema";
import { identityLog } from "@/lib/city/logs/identity-log";
import { leafDataOf, publishLogRow } from "@/lib/city/logs/transparency-log";
import { verifyReceipt } from "@/lib/tlog/verifying-client";
import { useDatabase } from "@/lib/city/database";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { commitNextKeysDoor, rotateKeyDoor, setRecoveryDelayDoor } from "@/lib/doors/declarations/keys/keys";
import { cancelRecoveryDoor, completeRecoveryDoor, holdRecoveryDoor, readRecoveryDoor, recoverDoor } from "@/lib/doors/declarations/keys/recover";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { readResidency } from "@/lib/doors/declarations/residency/residency";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { readVault } from "@/lib/doors/declarations/shelves/vault";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { callDoor, freshNonce, nonceSpent, presentation } from "../support/gate";
import { admitWithKey, callSigned, newKey, rotateAtGate, type TestKey } from "../support/signed";
import { recoveryMessage } from "@/lib/city/keys/recovery";
import { identityEvents } from "../support/identity";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/** Written out from the docs, not taken from the product: the hash a commitment holds, and the messages keys sign. */
const hashOf = (publicKey: string) => createHash("sha256").update(hexToBytes(publicKey)).digest("hex");
const rotation = (did: string, from: string, to: string, nonce: string) => `CITY-KEYS/1|rotate|${did}|${from}|${to}|${nonce}`;
const nextKeyOpen = (did: string, thumbprint: string, nonce: string) => `CITY-KEYS/1|recover|${did}|${thumbprint}|${nonce}`;

type Citizen = Awaited<ReturnType<typeof admitWithKey>>;

describeOnDatabases(
  "keys that are never lost for good (CITY-KEYS/1)",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const works = async (bearer: string) => (await callDoor(readResidency, { bearer })).status === 200;
    const controllerOf = async (did: string) => (await t().db.select().from(citizens).where(eq(citizens.did, did)))[0]!;
    const commit = (me: Citizen, keys: TestKey[]) =>
      callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: keys.map((k) => hashOf(k.publicKey)) } });
    const rotate = async (me: Citizen, from: TestKey | null, to: TestKey, signer: TestKey = to, extra: { bearer?: string; next?: string[] } = {}) => {
      const nonce = await freshNonce();
      const message = rotation(me.did, from ? from.keyid : "none", to.keyid, nonce);
      return callDoor(rotateKeyDoor, {
        bearer: extra.bearer,
        body: { did: me.did, nonce, public_key: to.publicKey, signature: await signer.signHex(message), next_key_hashes: extra.next ?? [] },
      });
    };
    const admitNamed = async () => {
      const name = `keys-${Math.random().toString(36).slice(2, 10)}`;
      return { ...(await admitWithKey({ name })), name };
    };
    const codesOf = async (me: { citizen_secret: string }) =>
      (await callDoor(recoverDoor, { bearer: me.citizen_secret, body: { mint: true } })).body.codes as string[];
    const delay = (me: { citizen_secret: string }, hours: number) => callDoor(setRecoveryDelayDoor, { bearer: me.citizen_secret, body: { hours } });
    const open = (did: string, code: string) => callDoor(recoverDoor, { body: { did, code } });
    const hold = (did: string, reason = "not-the-owner", ip = "198.51.100.7") => callDoor(holdRecoveryDoor, { params: { did }, body: { reason }, ip });
    const complete = (did: string, ticket: string) => callDoor(completeRecoveryDoor, { params: { did }, body: { ticket } });
    /** Time passes: the open recovery's window is over. */
    const windowPasses = (did: string) => t().raw(`UPDATE recoveries SET opens_after = now() - interval '1 second' WHERE did = '${did}' AND state = 'open'`);

    describe("pre-rotation", () => {
      it("refuses a rotation to an uncommitted key with the secret, the old key and the new key alike, on every path", async () => {
        const me = await admitNamed();
        const committed = await newKey();
        const stranger = await newKey();
        expect((await commit(me, [committed])).status).toBe(200);
        // The gate: the secret, the old key's and the new key's signatures, all valid.
        const atGate = await rotateAtGate(me, me.name, stranger);
        expect(atGate.body.verdict).toBe("filtered");
        expect(atGate.body.rule).toBe("controller");
        expect(atGate.body.reason).toMatch(/pre-rotation/);
        // The rotation door: signed by the new key, with the secret sent beside.
        expectProblem(await rotate(me, me.key, stranger, stranger, { bearer: me.citizen_secret }), 403, "forbidden");
        // Signed by the old key over the rotation message.
        expectProblem(await rotate(me, me.key, stranger, me.key), 403, "forbidden");
        const row = await controllerOf(me.did);
        expect(row.controllerPublicKey).toBe(me.key.publicKey);
        expect(row.nextKeyHashes).toEqual([hashOf(committed.publicKey)]);
        expect((await identityEvents(t(), me.did)).filter((e) => e === "key-rotated")).toHaveLength(0);
      });

      it("refuses binding an uncommitted first controller at the gate once a commitment stands", async () => {
        const plain = await callDoor(presentGate, { body: presentation() });
        const me = plain.body as { did: string; citizen_secret: string };
        const committed = await newKey();
        const other = await newKey();
        expect((await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: [hashOf(committed.publicKey)] } })).status).toBe(200);
        const name = (await controllerOf(me.did)).name;
        const bind = async (key: TestKey) => {
          const nonce = await freshNonce();
          return callDoor(presentGate, {
            bearer: me.citizen_secret,
            body: presentation({ name, nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) }),
          });
        };
        expect((await bind(other)).body.rule).toBe("controller");
        expect((await controllerOf(me.did)).controllerPublicKey).toBeNull();
        expect((await bind(committed)).body.verdict).toBe("admitted");
        expect((await controllerOf(me.did)).controllerPublicKey).toBe(committed.publicKey);
        expect(await identityEvents(t(), me.did)).toContain("key-bound");
      });

      it("rotates to a committed key signed by that key alone (neither the secret nor the old key), and signed requests follow", async () => {
        const me = await admitNamed();
        const next = await newKey();
        const after = await newKey();
        expect((await commit(me, [next])).status).toBe(200);
        const rotated = await rotate(me, me.key, next, next, { next: [hashOf(after.publicKey)] });
        expect(rotated.status).toBe(200);
        expect(rotated.body).toMatchObject({ protocol: "CITY-KEYS/1", from: me.key.keyid, to: next.keyid, next_key_hashes: [hashOf(after.publicKey)] });
        expect(rotated.body.identity_log_receipt.checkpoint).toContain("identity-log");
        const row = await controllerOf(me.did);
        expect(row.controllerPublicKey).toBe(next.publicKey);
        expect(row.nextKeyHashes).toEqual([hashOf(after.publicKey)]);
        // The request keys followed the controller: the new key signs; the old key is rotated away.
        expect((await callSigned(readVault, next)).status).toBe(200);
        const keys = await t().db.select().from(requestKeys).where(eq(requestKeys.did, me.did));
        expect(keys.find((k) => k.publicKey === me.key.publicKey)?.rotatedAt).not.toBeNull();
        // The secret is unchanged.
        expect(await works(me.citizen_secret)).toBe(true);
        // The spent commitment: the old committed key cannot come back.
        expectProblem(await rotate(me, next, next), 403, "forbidden");
        expect(await identityEvents(t(), me.did)).toEqual(expect.arrayContaining(["key-bound", "next-keys-committed", "key-rotated"]));
      });

      it("takes no other signature as a rotation: a gate signature over the bare nonce, or the wrong thumbprints; the nonce is spent either way", async () => {
        const me = await admitNamed();
        const next = await newKey();
        await commit(me, [next]);
        const nonce = await freshNonce();
        const gateSignature = await next.signHex(nonce);
        const refused = await callDoor(rotateKeyDoor, {
          body: { did: me.did, nonce, public_key: next.publicKey, signature: gateSignature, next_key_hashes: [] },
        });
        expectProblem(refused, 401, "unauthorized");
        expect(await nonceSpent(t().db, nonce)).toBe(true);
        const wrongFrom = await freshNonce();
        const forged = await callDoor(rotateKeyDoor, {
          body: {
            did: me.did,
            nonce: wrongFrom,
            public_key: next.publicKey,
            signature: await next.signHex(rotation(me.did, "none", next.keyid, wrongFrom)),
            next_key_hashes: [],
          },
        });
        expectProblem(forged, 401, "unauthorized");
        expect((await controllerOf(me.did)).controllerPublicKey).toBe(me.key.publicKey);
      });

      it("keeps the gate's rotation where no commitment stands, and makes it obey one where it does (spending the hash)", async () => {
        const me = await admitNamed();
        const free = await newKey();
        expect((await rotateAtGate(me, me.name, free)).body.verdict).toBe("admitted");
        expect((await controllerOf(me.did)).controllerPublicKey).toBe(free.publicKey);
        const moved = { ...me, key: free };
        const a = await newKey();
        const b = await newKey();
        await commit(moved, [a, b]);
        expect((await rotateAtGate(moved, me.name, a)).body.verdict).toBe("admitted");
        const row = await controllerOf(me.did);
        expect(row.controllerPublicKey).toBe(a.publicKey);
        expect(row.nextKeyHashes).toEqual([hashOf(b.publicKey)]);
      });

      it("commits with the secret or a signed request where none stands, never a session token; once one stands neither changes nor withdraws it; bad lists are 400", async () => {
        const me = await admitNamed();
        const next = await newKey();
        const token = (await callDoor(mintToken, { bearer: me.citizen_secret, body: {} })).body.token;
        expectProblem(await callDoor(commitNextKeysDoor, { bearer: token, body: { next_key_hashes: [hashOf(next.publicKey)] } }), 403, "forbidden");
        expect((await callSigned(commitNextKeysDoor, me.key, { body: { next_key_hashes: [hashOf(next.publicKey)] } })).status).toBe(200);
        expect((await controllerOf(me.did)).nextKeyHashes).toEqual([hashOf(next.publicKey)]);
        const h = hashOf(next.publicKey);
        expect((await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: [h, h] } })).status).toBe(400);
        expect((await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: Array(4).fill(h) } })).status).toBe(400);
        expect((await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: ["g".repeat(64)] } })).status).toBe(400);
        // Once a commitment stands, only a committed key changes or withdraws it (by rotating): the secret and the key are refused.
        const thief = await newKey();
        expectProblem(await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: [] } }), 403, "forbidden");
        expectProblem(
          await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: [hashOf(thief.publicKey)] } }),
          403,
          "forbidden",
        );
        expectProblem(await callSigned(commitNextKeysDoor, me.key, { body: { next_key_hashes: [hashOf(thief.publicKey)] } }), 403, "forbidden");
        expect((await controllerOf(me.did)).nextKeyHashes).toEqual([h]);
        expect((await rotateAtGate(me, me.name, thief)).body.verdict).toBe("filtered");
        // The committed key withdraws it by rotating with an empty list (no delay stands).
        expect((await rotate(me, me.key, next)).status).toBe(200);
        expect((await controllerOf(me.did)).nextKeyHashes).toBeNull();
      });
    });

    describe("the identity log", () => {
      it("records every key event with a receipt that verifies offline against the identity log's key, and never a secret, code or ticket", async () => {
        const key = await newKey();
        const nonce = await freshNonce();
        const first = await callDoor(presentGate, {
          body: presentation({ nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) }),
        });
        const me: Citizen = { ...(first.body as Citizen), key };
        const next = await newKey();
        const answers = [first];
        answers.push(await commit(me, [next]));
        answers.push(await rotate(me, key, next));
        // With no delay a code resets the secret at once.
        const reset = await open(me.did, (await codesOf(me))[0]!);
        answers.push(reset);
        const mine = { citizen_secret: reset.body.citizen_secret as string };
        answers.push(await delay(mine, 24));
        const codes = await codesOf(mine);
        const opened = await open(me.did, codes[0]!);
        answers.push(opened, await hold(me.did, "verifying-owner", "192.0.2.44"));
        answers.push(await callDoor(cancelRecoveryDoor, { bearer: mine.citizen_secret, params: { did: me.did }, body: {} }));
        answers.push(await open(me.did, codes[1]!));
        await windowPasses(me.did);
        const done = await complete(me.did, answers.at(-1)!.body.recovery.ticket);
        answers.push(done);
        // Lowering the delay waits it out: a step opened, in the log as one.
        const lowered = await delay({ citizen_secret: done.body.citizen_secret }, 0);
        expect(lowered.body).toMatchObject({ delay_hours: 24, pending: { step: "lower-delay", delay_hours: 0 } });
        answers.push(lowered);
        // The first admission carries both logs' receipts, each its own.
        expect(first.body.log_receipt.checkpoint).not.toEqual(first.body.identity_log_receipt.checkpoint);
        const vkey = (await identityLog.logSigner(t().db)).vkey;
        const rowOf = async (seq: number) => publishLogRow((await t().db.select().from(identityLogRows).where(eq(identityLogRows.seq, seq)))[0]!);
        const events: string[] = [];
        for (const answer of answers) {
          const receipt = answer.body.identity_log_receipt;
          expect(receipt, JSON.stringify(answer.body)).toBeDefined();
          const row = await rowOf(receipt.seq);
          expect(row.did).toBe(me.did);
          expect(verifyReceipt(receipt, leafDataOf(row), vkey)).toMatchObject({ ok: true });
          events.push(row.event as string);
        }
        expect(events).toEqual([
          "key-bound",
          "next-keys-committed",
          "key-rotated",
          "secret-reset",
          "delay-set",
          "recovery-opened",
          "recovery-held",
          "recovery-cancelled",
          "recovery-opened",
          "recovery-completed",
          "recovery-opened",
        ]);
        const all = JSON.stringify(await t().db.select().from(identityLogRows).where(eq(identityLogRows.did, me.did)));
        for (const secret of [
          me.citizen_secret,
          mine.citizen_secret,
          done.body.citizen_secret,
          codes[0],
          opened.body.recovery.ticket,
          lowered.body.pending.ticket,
        ])
          expect(all).not.toContain(secret);
        expect(all).not.toMatch(/city_(sk|st|rc|rt)_/);
        // Nor who held: a hold names its reason, never its address.
        expect(all).not.toContain("192.0.2.44");
      });
      it("takes first admissions with a controller and commitments landing together (both logs' heads in one statement) in turn: each row chained, each size checkpointed", async () => {
        const others = await Promise.all([admitNamed(), admitNamed(), admitNamed()]);
        const [admitted, committed] = await Promise.all([
          Promise.all(Array.from({ length: 6 }, () => admitWithKey())),
          Promise.all(others.map(async (me) => commit(me, [await newKey()]))),
        ]);
        expect(committed.map((a) => a.status)).toEqual([200, 200, 200]);
        for (const me of admitted) expect(await identityEvents(t(), me.did)).toEqual(["key-bound"]);
        const receipts = [...admitted.map((a) => (a as Record<string, any>).identity_log_receipt), ...committed.map((a) => a.body.identity_log_receipt)];
        expect(new Set(receipts.map((r) => r.seq)).size).toBe(receipts.length);
        expect(await identityLog.verifyHashChain(t().db)).toMatchObject({ intact: true, first_broken: null });
        // Every append checkpointed its own size: the latest checkpoint is the whole log.
        const raw = await t().raw("SELECT (SELECT max(seq) FROM identity_log)::int AS rows, (SELECT max(size) FROM identity_log_checkpoints)::int AS largest");
        const [sizes] = (Array.isArray(raw) ? raw : (raw as { rows: unknown[] }).rows) as { rows: number; largest: number }[];
        expect(sizes!.largest).toBe(sizes!.rows);
        const vkey = (await identityLog.logSigner(t().db)).vkey;
        for (const receipt of receipts) {
          const row = publishLogRow((await t().db.select().from(identityLogRows).where(eq(identityLogRows.seq, receipt.seq)))[0]!);
          expect(verifyReceipt(receipt, leafDataOf(row), vkey)).toMatchObject({ ok: true });
        }
      });
    });

    describe("recovery with a public window", () => {
      it("sets a delay with the secret (0 or 24 to 168 h), never a session token; delay 0 keeps CITY-RECOVER/1 as it was", async () => {
        const me = await admitNamed();
        const token = (await callDoor(mintToken, { bearer: me.citizen_secret, body: {} })).body.token;
        expectProblem(await delay({ citizen_secret: token }, 24), 403, "forbidden");
        for (const bad of [1, 23, 169]) expect((await delay(me, bad)).status).toBe(400);
        expect((await controllerOf(me.did)).recoveryDelayHours).toBe(0);
        const codes = await codesOf(me);
        const now = await open(me.did, codes[0]!);
        expect(now.status).toBe(200);
        expect(now.body.citizen_secret).toMatch(/^city_sk_/);
        expect(now.body.recovery).toBeUndefined();
        expect(await identityEvents(t(), me.did)).toContain("secret-reset");
      });

      it("opens a public recovery with a code instead, cancelled by the current secret; one open at a time", async () => {
        const me = await admitNamed();
        expect((await delay(me, 48)).status).toBe(200);
        const codes = await codesOf(me);
        const opened = await open(me.did, codes[0]!);
        expect(opened.status).toBe(200);
        expect(opened.body.citizen_secret).toBeUndefined();
        expect(opened.body.recovery.ticket).toMatch(/^city_rt_/);
        const hours = (Date.parse(opened.body.recovery.opens_after) - Date.parse(opened.body.recovery.opened_at)) / 3_600_000;
        expect(hours).toBe(48);
        // The citizen is told in its poll.
        const poll = await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } });
        expect(poll.body.delta.recovery_open).toEqual({ opens_after: opened.body.recovery.opens_after, holds: 0, step: "recovery", via: "code" });
        // Nothing changed yet: the secret still works.
        expect(await works(me.citizen_secret)).toBe(true);
        const seen = await callDoor(readRecoveryDoor, { params: { did: me.did } });
        expect(seen.body).toMatchObject({ delay_hours: 48, recovery: { state: "open", holds: 0, holds_left: 2, via: "code" } });
        expect(JSON.stringify(seen.body)).not.toContain("city_rt_");
        // A second open is refused, and its code stays unspent.
        expectProblem(await open(me.did, codes[1]!), 409, "conflict");
        expect((await t().db.select().from(recoveryCodes).where(eq(recoveryCodes.did, me.did))).filter((c) => c.usedAt).length).toBe(1);
        // Another citizen cannot cancel it; a session token cannot either; the secret can.
        const other = await admitNamed();
        expectProblem(await callDoor(cancelRecoveryDoor, { bearer: other.citizen_secret, params: { did: me.did }, body: {} }), 403, "forbidden");
        const cancelled = await callDoor(cancelRecoveryDoor, { bearer: me.citizen_secret, params: { did: me.did }, body: {} });
        expect(cancelled.status).toBe(200);
        expect((await callDoor(readRecoveryDoor, { params: { did: me.did } })).body.recovery.state).toBe("cancelled");
        expect((await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } })).body.delta.recovery_open).toBeNull();
        // Its ticket completes nothing now.
        expectProblem(await complete(me.did, opened.body.recovery.ticket), 401, "unauthorized");
        expect(await works(me.citizen_secret)).toBe(true);
        expect(await identityEvents(t(), me.did)).toEqual(expect.arrayContaining(["delay-set", "recovery-opened", "recovery-cancelled"]));
      });

      it("takes two holds and no more, each moving opens_after by 24 h; completes only after opens_after and only by its opener", async () => {
        const me = await admitNamed();
        await delay(me, 24);
        const codes = await codesOf(me);
        const token = (await callDoor(mintToken, { bearer: me.citizen_secret, body: {} })).body.token;
        const opened = (await open(me.did, codes[0]!)).body.recovery;
        const first = await hold(me.did, "suspected-theft", "198.51.100.21");
        expect(first.status).toBe(200);
        expect(Date.parse(first.body.opens_after) - Date.parse(opened.opens_after)).toBe(24 * 3_600_000);
        expect((await hold(me.did, "not a reason")).status).toBe(400);
        const second = await hold(me.did, "owner-reachable", "198.51.100.22");
        expect(second.body.holds).toBe(2);
        expectProblem(await hold(me.did, "verifying-owner", "198.51.100.23"), 409, "limit_reached");
        expect((await callDoor(readRecoveryDoor, { params: { did: me.did } })).body.recovery).toMatchObject({ holds: 2, holds_left: 0 });
        // Not before opens_after.
        expectProblem(await complete(me.did, opened.ticket), 409, "conflict");
        await windowPasses(me.did);
        // After it the secret can no longer cancel; only the opener's ticket completes.
        expectProblem(await callDoor(cancelRecoveryDoor, { bearer: me.citizen_secret, params: { did: me.did }, body: {} }), 409, "conflict");
        expectProblem(await complete(me.did, codes[1]!), 401, "unauthorized");
        expectProblem(await complete(me.did, opened.ticket.slice(0, -1) + (opened.ticket.endsWith("0") ? "1" : "0")), 401, "unauthorized");
        const done = await complete(me.did, opened.ticket);
        expect(done.status).toBe(200);
        expect(done.body.controller).toBe("none");
        // Every older credential is dead: the secret, the session token, the unused codes, the controller key.
        expect(await works(done.body.citizen_secret)).toBe(true);
        expect(await works(me.citizen_secret)).toBe(false);
        expect(await works(token)).toBe(false);
        expect((await open(me.did, codes[2]!)).status).toBe(401);
        expect((await controllerOf(me.did)).controllerPublicKey).toBeNull();
        // A signature made after the completion (a second on: created has whole seconds) opens nothing.
        expect((await callSigned(readVault, me.key, { sign: { created: Math.floor(Date.now() / 1000) + 2 } })).status).toBe(401);
        expectProblem(await complete(me.did, opened.ticket), 401, "unauthorized");
        expect(await identityEvents(t(), me.did)).toEqual(expect.arrayContaining(["recovery-held", "recovery-completed"]));
      });

      it("takes a hold signed with a key rotated away long ago as its owner's: none of the 2 anonymous holds, a stranger's key 401, a replay 401 (issue 43, item 5)", async () => {
        const me = await admitNamed();
        const old = me.key;
        const next = await newKey();
        expect((await commit(me, [next])).status).toBe(200);
        expect((await rotate(me, old, next, next)).status).toBe(200);
        // Time passes: the old key's request_keys row expired (35 s after its rotation) and went; only the key history knows it.
        await t().raw(`DELETE FROM request_keys WHERE did = '${me.did}' AND thumbprint = '${old.keyid}'`);
        await delay(me, 24);
        expect((await open(me.did, (await codesOf(me))[0]!)).status).toBe(200);
        // The 2 anonymous holds are taken, from a /24 of this test's own: the other tests' holds from
        // 198.51.100.0/24 would pass that source's 6 an hour with these, in some orders of the file.
        expect((await hold(me.did, "suspected-theft", "198.18.7.61")).status).toBe(200);
        expect((await hold(me.did, "owner-reachable", "198.18.7.62")).status).toBe(200);
        expectProblem(await hold(me.did, "verifying-owner", "198.18.7.63"), 409, "limit_reached");
        const before = (await t().db.select().from(recoveries).where(eq(recoveries.did, me.did)))[0]!;

        // Signed with the key rotated away: its owner's hold, not an anonymous one.
        const own = await callSigned(holdRecoveryDoor, old, { params: { did: me.did }, body: { reason: "not-the-owner" } });
        expect(own.status, JSON.stringify(own.body)).toBe(200);
        expect(own.body.note).toMatch(/^Held by its own citizen/);
        expect(own.body.holds).toBe(2);
        const after = (await t().db.select().from(recoveries).where(eq(recoveries.did, me.did)))[0]!;
        expect(after.holds).toBe(2);
        expect(after.opensAfter.getTime() - before.opensAfter.getTime()).toBe(24 * 3_600_000);
        const [held] = await t()
          .db.select()
          .from(identityLogRows)
          .where(eq(identityLogRows.event, "recovery-held"))
          .orderBy(desc(identityLogRows.seq))
          .limit(1);
        expect(held!.details).toMatchObject({ by: "owner" });
        // The same signature again: a replay, refused.
        expectProblem(
          await callSigned(holdRecoveryDoor, old, { params: { did: me.did }, body: { reason: "not-the-owner" }, headers: own.sent }),
          401,
          "signature_replayed",
        );
        // A key never bound to this citizen proves nothing here, nor does another citizen's old key.
        expectProblem(await callSigned(holdRecoveryDoor, await newKey(), { params: { did: me.did }, body: { reason: "not-the-owner" } }), 401, "unknown_key");
        const other = await admitNamed();
        expectProblem(await callSigned(holdRecoveryDoor, other.key, { params: { did: me.did }, body: { reason: "not-the-owner" } }), 409, "limit_reached");
        expect((await t().db.select().from(recoveries).where(eq(recoveries.did, me.did)))[0]!.opensAfter).toEqual(after.opensAfter);
      });

      it("never lets a lower credential's steps block a higher one: opens counted per credential, a higher step cancels a lower one's, a raise cancels a lower lowering", async () => {
        const me = await admitNamed();
        expect((await delay(me, 24)).body).toMatchObject({ delay_hours: 24, pending: null });
        const latest = async () => (await callDoor(readRecoveryDoor, { params: { did: me.did } })).body.recovery;
        // The secret (a thief's, say) lowers the delay; the key raises it, which cancels that lowering.
        expect((await delay(me, 0)).body.pending).toMatchObject({ step: "lower-delay", delay_hours: 0 });
        const raised = await callSigned(setRecoveryDelayDoor, me.key, { body: { hours: 48 } });
        expect(raised.body).toMatchObject({ delay_hours: 48, pending: null });
        expect(await latest()).toMatchObject({ state: "cancelled", step: "lower-delay", via: "secret" });
        // The secret spends its three opens a day (the lowering above, then open, cancel, open)...
        expect((await delay(me, 24)).status).toBe(200);
        expect((await callDoor(cancelRecoveryDoor, { bearer: me.citizen_secret, params: { did: me.did }, body: {} })).status).toBe(200);
        expect((await delay(me, 24)).body.pending).toMatchObject({ step: "lower-delay" });
        expect((await delay(me, 0)).status).toBe(429);
        // ...and the key's controller recovery is neither refused by the secret's count nor by its open step: it takes its place.
        const nonce = await freshNonce();
        const controller_signature = await me.key.signHex(recoveryMessage(me.did, nonce));
        const recovered = await callDoor(recoverDoor, { body: { did: me.did, nonce, controller_signature } });
        expect(recovered.status, JSON.stringify(recovered.body)).toBe(200);
        expect(recovered.body.citizen_secret).toBeUndefined();
        expect(await latest()).toMatchObject({ state: "open", step: "recovery", via: "controller" });
        // The secret can neither cancel it nor push a step of its own in front of it.
        expectProblem(await callDoor(cancelRecoveryDoor, { bearer: me.citizen_secret, params: { did: me.did }, body: {} }), 403, "forbidden");
        expect((await delay(me, 24)).status).toBe(429);
        expect(await latest()).toMatchObject({ state: "open", via: "controller" });
      });

      it("lets a committed next key open a recovery, which makes it the controller on completion", async () => {
        const me = await admitNamed();
        const next = await newKey();
        await commit(me, [next]);
        await delay(me, 24);
        // While the commitment stands, an uncommitted key opens nothing (and is not counted as an open).
        const early = await newKey();
        const n1 = await freshNonce();
        const refusedEarly = await callDoor(recoverDoor, {
          body: { did: me.did, nonce: n1, next_public_key: early.publicKey, next_signature: await early.signHex(nextKeyOpen(me.did, early.keyid, n1)) },
        });
        expectProblem(refusedEarly, 403, "forbidden");
        expect(await t().db.select().from(recoveries).where(eq(recoveries.did, me.did))).toHaveLength(0);
        const nonce = await freshNonce();
        const opened = await callDoor(recoverDoor, {
          body: { did: me.did, nonce, next_public_key: next.publicKey, next_signature: await next.signHex(nextKeyOpen(me.did, next.keyid, nonce)) },
        });
        expect(opened.status).toBe(200);
        expect(opened.body.recovery.state).toBe("open");
        // The current key cancels any recovery: here the opener waits.
        await windowPasses(me.did);
        const done = await complete(me.did, opened.body.recovery.ticket);
        expect(done.body.controller).toBe(next.keyid);
        const row = await controllerOf(me.did);
        expect(row.controllerPublicKey).toBe(next.publicKey);
        expect(row.nextKeyHashes).toBeNull();
        // With the commitment spent, an uncommitted key still opens nothing.
        const stranger = await newKey();
        const n2 = await freshNonce();
        const refused = await callDoor(recoverDoor, {
          body: {
            did: me.did,
            nonce: n2,
            next_public_key: stranger.publicKey,
            next_signature: await stranger.signHex(nextKeyOpen(me.did, stranger.keyid, n2)),
          },
        });
        expectProblem(refused, 403, "forbidden");
      });

      it("counts 3 opens a day per citizen, and holds per client address", async () => {
        const me = await admitNamed();
        await delay(me, 24);
        const codes = await codesOf(me);
        for (const code of codes.slice(0, 3)) {
          expect((await open(me.did, code)).status).toBe(200);
          expect((await callDoor(cancelRecoveryDoor, { bearer: me.citizen_secret, params: { did: me.did }, body: {} })).status).toBe(200);
        }
        expectProblem(await open(me.did, codes[3]!), 429, "rate_limited");
        // The refused open spent nothing: its code still counts as unused.
        expect((await t().db.select().from(recoveryCodes).where(eq(recoveryCodes.did, me.did))).filter((c) => c.usedAt).length).toBe(3);

        // One address holds at most 4 a day (the default), across recoveries.
        const ip = "203.0.113.77";
        for (let i = 0; i < 2; i++) {
          const c = await admitNamed();
          await delay(c, 24);
          await open(c.did, (await codesOf(c))[0]!);
          expect((await hold(c.did, "not-the-owner", ip)).status).toBe(200);
          expect((await hold(c.did, "not-the-owner", ip)).status).toBe(200);
        }
        const last = await admitNamed();
        await delay(last, 24);
        await open(last.did, (await codesOf(last))[0]!);
        expectProblem(await hold(last.did, "not-the-owner", ip), 429, "rate_limited");
        expect((await t().db.select().from(recoveries).where(eq(recoveries.did, last.did)))[0]!.holds).toBe(0);
        // Without an open recovery a hold is 404 and counts nothing.
        expectProblem(await hold(me.did, "not-the-owner", "203.0.113.78"), 404, "not_found");
      });

      it("takes exactly one of two holds landing together when one hold is left: the recovery holds 2, moved 48 h in all", async () => {
        const me = await admitNamed();
        await delay(me, 24);
        const opened = (await open(me.did, (await codesOf(me))[0]!)).body.recovery;
        expect((await hold(me.did, "not-the-owner", "198.51.100.31")).status).toBe(200);
        const both = await Promise.all([hold(me.did, "suspected-theft", "198.51.100.32"), hold(me.did, "owner-reachable", "198.51.100.33")]);
        expect(both.map((a) => a.status).sort()).toEqual([200, 409]);
        expectProblem(
          both.find((a) => a.status === 409)!,
          409,
          "limit_reached",
        );
        const [row] = await t().db.select().from(recoveries).where(eq(recoveries.did, me.did));
        expect(row!.holds).toBe(2);
        expect(row!.opensAfter.getTime() - Date.parse(opened.opens_after)).toBe(48 * 3_600_000);
        expect((await identityEvents(t(), me.did)).filter((e) => e === "recovery-held")).toHaveLength(2);
      });

      it("lets exactly one of a completion and a hold, or a completion and a cancel, landing together win; two opens at once make one", async () => {
        const cancel = (me: Citizen) => callDoor(cancelRecoveryDoor, { bearer: me.citizen_secret, params: { did: me.did }, body: {} });
        const opened = async () => {
          const me = await admitNamed();
          await delay(me, 24);
          return { me, ticket: (await open(me.did, (await codesOf(me))[0]!)).body.recovery.ticket as string };
        };
        // Past the window a hold and a completion are both allowed: exactly one lands, and the row and the log say which.
        {
          const { me, ticket } = await opened();
          await windowPasses(me.did);
          const [done, held] = await Promise.all([complete(me.did, ticket), hold(me.did)]);
          const [row] = await t().db.select().from(recoveries).where(eq(recoveries.did, me.did));
          const events = (await identityEvents(t(), me.did)).slice(-1);
          expect([done.status, held.status].filter((s) => s === 200)).toHaveLength(1);
          if (done.status === 200) {
            expect(row).toMatchObject({ state: "completed", holds: 0 });
            expect(events).toEqual(["recovery-completed"]);
          } else {
            expectProblem(done, 409, "conflict");
            expect(row).toMatchObject({ state: "open", holds: 1 });
            expect(events).toEqual(["recovery-held"]);
          }
        }
        // A cancel lands only before the window ends, a completion only after: sent together, the clock decides, both ways.
        {
          const { me, ticket } = await opened();
          const [done, cancelled] = await Promise.all([complete(me.did, ticket), cancel(me)]);
          // Refused either way: inside the window (409), or, when the cancel landed first, with the ticket of a cancelled recovery (401).
          expect([401, 409], JSON.stringify(done.body)).toContain(done.status);
          expectProblem(done, done.status, done.status === 409 ? "conflict" : "unauthorized");
          expect(cancelled.status).toBe(200);
          expect((await t().db.select().from(recoveries).where(eq(recoveries.did, me.did)))[0]!.state).toBe("cancelled");
        }
        {
          const { me, ticket } = await opened();
          await windowPasses(me.did);
          const [done, cancelled] = await Promise.all([complete(me.did, ticket), cancel(me)]);
          expect(done.status).toBe(200);
          // Refused either way: past the window (409), or, when the completion landed first, with a secret it replaced (401).
          expect([401, 409], JSON.stringify(cancelled.body)).toContain(cancelled.status);
          expect((await t().db.select().from(recoveries).where(eq(recoveries.did, me.did)))[0]!.state).toBe("completed");
        }
        const me = await admitNamed();
        await delay(me, 24);
        const codes = await codesOf(me);
        const both = await Promise.all([open(me.did, codes[0]!), open(me.did, codes[1]!)]);
        expect(both.map((a) => a.status).sort()).toEqual([200, 409]);
        expect(await t().db.select().from(recoveries).where(eq(recoveries.did, me.did))).toHaveLength(1);
      });
    });
  },
  { neon: "transactions and locks: one open recovery, guarded updates of its row" },
);
