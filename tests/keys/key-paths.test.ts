import { createHash } from "node:crypto";
import { asc, eq } from "drizzle-orm";
import { hexToBytes } from "@noble/hashes/utils.js";
import { beforeAll, describe, expect, it } from "vitest";
import { citizens, identityLog as identityLogRows, recoveries } from "@/db/schema";
import { useDatabase } from "@/lib/city/database";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { commitNextKeysDoor, rotateKeyDoor, setRecoveryDelayDoor } from "@/lib/doors/declarations/keys/keys";
import { completeRecoveryDoor, recoverDoor } from "@/lib/doors/declarations/keys/recover";
import { readVault } from "@/lib/doors/declarations/shelves/vault";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, freshNonce, presentation } from "../support/gate";
import { admitWithKey, callSigned, newKey, rotateAtGate, type TestKey } from "../support/signed";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/*
 * Every path that changes a citizen's keys, secret or recovery delay writes exactly one
 * identity-log row, with the facts of the change (issue 46: a rotation at the gate that wrote no
 * row, a delay-set row without its delay, went unnoticed). The expected facts are written out here
 * from docs/keys.md (thumbprints are the test keys' RFC 7638 thumbprints, hashes SHA-256 of the
 * raw key), never read back from the code. And while a commitment stands, an uncommitted key moves
 * nothing on any path, and writes nothing to the log.
 */
const hashOf = (publicKey: string) => createHash("sha256").update(hexToBytes(publicKey)).digest("hex");
const rotation = (did: string, from: string, to: string, nonce: string) => `CITY-KEYS/1|rotate|${did}|${from}|${to}|${nonce}`;
const nextKeyOpen = (did: string, thumbprint: string, nonce: string) => `CITY-KEYS/1|recover|${did}|${thumbprint}|${nonce}`;
type Citizen = Awaited<ReturnType<typeof admitWithKey>> & { name: string };
type Answer = { status: number; body: Record<string, any> };

describeOnDatabases(
  "key-changing paths and the identity log",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const rowsOf = async (did: string) =>
      await t()
        .db.select({ event: identityLogRows.event, details: identityLogRows.details })
        .from(identityLogRows)
        .where(eq(identityLogRows.did, did))
        .orderBy(asc(identityLogRows.seq));
    const citizenRow = async (did: string) => (await t().db.select().from(citizens).where(eq(citizens.did, did)))[0]!;
    const admitNamed = async (): Promise<Citizen> => {
      const name = `paths-${Math.random().toString(36).slice(2, 10)}`;
      return { ...(await admitWithKey({ name })), name };
    };
    const commit = (me: { citizen_secret: string }, keys: TestKey[]) =>
      callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: keys.map((k) => hashOf(k.publicKey)) } });
    const delay = (me: { citizen_secret: string }, hours: number) => callDoor(setRecoveryDelayDoor, { bearer: me.citizen_secret, body: { hours } });
    const rotate = async (did: string, fromKeyid: string, to: TestKey, signer: TestKey = to, extra: { bearer?: string; next?: string[] } = {}) => {
      const nonce = await freshNonce();
      return callDoor(rotateKeyDoor, {
        bearer: extra.bearer,
        body: {
          did,
          nonce,
          public_key: to.publicKey,
          signature: await signer.signHex(rotation(did, fromKeyid, to.keyid, nonce)),
          next_key_hashes: extra.next ?? [],
        },
      });
    };
    const codesOf = async (me: { citizen_secret: string }) =>
      (await callDoor(recoverDoor, { bearer: me.citizen_secret, body: { mint: true } })).body.codes as string[];
    const openWithNextKey = async (did: string, key: TestKey) => {
      const nonce = await freshNonce();
      return callDoor(recoverDoor, {
        body: { did, nonce, next_public_key: key.publicKey, next_signature: await key.signHex(nextKeyOpen(did, key.keyid, nonce)) },
      });
    };
    const windowPasses = (did: string) => t().raw(`UPDATE recoveries SET opens_after = now() - interval '1 second' WHERE did = '${did}' AND state = 'open'`);
    const openRecoveryId = async (did: string) => (await t().db.select().from(recoveries).where(eq(recoveries.did, did))).find((r) => r.state === "open")!.id;
    const complete = (did: string, ticket: string) => callDoor(completeRecoveryDoor, { params: { did }, body: { ticket } });

    /**
     * One case per path: `prepare` brings a citizen to where the path applies (its own rows are not
     * counted), `act` takes the path and answers the expected row: its event and its details, exactly.
     */
    interface PathCase {
      name: string;
      prepare: () => Promise<{ did: string; act: () => Promise<{ answer: Answer; event: string; details: Record<string, unknown> }> }>;
    }
    const CASES: PathCase[] = [
      {
        name: "the gate binds a first controller (the secret and the key's signature)",
        prepare: async () => {
          const me = (await callDoor(presentGate, { body: presentation() })).body as { did: string; citizen_secret: string };
          const name = (await citizenRow(me.did)).name;
          const key = await newKey();
          return {
            did: me.did,
            act: async () => {
              const nonce = await freshNonce();
              const answer = await callDoor(presentGate, {
                bearer: me.citizen_secret,
                body: presentation({ name, nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) }),
              });
              return { answer, event: "key-bound", details: { via: "gate", to: key.keyid, public_key: key.publicKey } };
            },
          };
        },
      },
      {
        name: "the gate rotates the controller (no commitment stands)",
        prepare: async () => {
          const me = await admitNamed();
          const next = await newKey();
          return {
            did: me.did,
            act: async () => ({
              answer: await rotateAtGate(me, me.name, next),
              event: "key-rotated",
              details: { via: "gate", from: me.key.keyid, to: next.keyid, public_key: next.publicKey },
            }),
          };
        },
      },
      {
        name: "the gate rotates to a committed key (spending its hash)",
        prepare: async () => {
          const me = await admitNamed();
          const [next, other] = [await newKey(), await newKey()];
          expect((await commit(me, [next, other])).status).toBe(200);
          return {
            did: me.did,
            act: async () => ({
              answer: await rotateAtGate(me, me.name, next),
              event: "key-rotated",
              details: { via: "gate", from: me.key.keyid, to: next.keyid, public_key: next.publicKey },
            }),
          };
        },
      },
      {
        name: "commit-next-keys commits hashes",
        prepare: async () => {
          const me = await admitNamed();
          const [a, b] = [await newKey(), await newKey()];
          return {
            did: me.did,
            act: async () => ({
              answer: await commit(me, [a, b]),
              event: "next-keys-committed",
              details: { next_key_hashes: `${hashOf(a.publicKey)},${hashOf(b.publicKey)}`, count: 2 },
            }),
          };
        },
      },
      {
        name: "rotate-key moves to a committed key, committing the next",
        prepare: async () => {
          const me = await admitNamed();
          const [next, after] = [await newKey(), await newKey()];
          expect((await commit(me, [next])).status).toBe(200);
          return {
            did: me.did,
            act: async () => ({
              answer: await rotate(me.did, me.key.keyid, next, next, { next: [hashOf(after.publicKey)] }),
              event: "key-rotated",
              details: {
                via: "pre-rotation",
                from: me.key.keyid,
                to: next.keyid,
                public_key: next.publicKey,
                next_key_hashes: hashOf(after.publicKey),
                count: 1,
              },
            }),
          };
        },
      },
      {
        name: "rotate-key withdraws pre-rotation (an empty list, no delay standing)",
        prepare: async () => {
          const me = await admitNamed();
          const next = await newKey();
          expect((await commit(me, [next])).status).toBe(200);
          return {
            did: me.did,
            act: async () => ({
              answer: await rotate(me.did, me.key.keyid, next),
              event: "key-rotated",
              details: { via: "pre-rotation", from: me.key.keyid, to: next.keyid, public_key: next.publicKey, next_key_hashes: null, count: 0 },
            }),
          };
        },
      },
      {
        name: "set-recovery-delay raises the delay",
        prepare: async () => {
          const me = await admitNamed();
          return { did: me.did, act: async () => ({ answer: await delay(me, 72), event: "delay-set", details: { hours: 72 } }) };
        },
      },
      {
        name: "set-recovery-delay back to 0 from 0 (a delay set is logged even when it is the one standing)",
        prepare: async () => {
          const me = await admitNamed();
          return { did: me.did, act: async () => ({ answer: await delay(me, 0), event: "delay-set", details: { hours: 0 } }) };
        },
      },
      {
        name: "a recovery code resets the secret at once (no delay)",
        prepare: async () => {
          const me = await admitNamed();
          const [code] = await codesOf(me);
          return {
            did: me.did,
            act: async () => ({ answer: await callDoor(recoverDoor, { body: { did: me.did, code } }), event: "secret-reset", details: { via: "code" } }),
          };
        },
      },
      {
        name: "a public recovery opened with a code completes: the controller unbound",
        prepare: async () => {
          const me = await admitNamed();
          expect((await delay(me, 24)).status).toBe(200);
          const ticket = (await callDoor(recoverDoor, { body: { did: me.did, code: (await codesOf(me))[0] } })).body.recovery.ticket as string;
          await windowPasses(me.did);
          const recovery = await openRecoveryId(me.did);
          return {
            did: me.did,
            act: async () => ({
              answer: await complete(me.did, ticket),
              event: "recovery-completed",
              details: { recovery, step: "recovery", via: "code", from: me.key.keyid, to: "none", next_key_hashes: null },
            }),
          };
        },
      },
      {
        name: "a recovery opened by a committed next key completes: that key the controller, the other hash left standing",
        prepare: async () => {
          const me = await admitNamed();
          const [next, other] = [await newKey(), await newKey()];
          expect((await commit(me, [next, other])).status).toBe(200);
          expect((await delay(me, 24)).status).toBe(200);
          const opened = await openWithNextKey(me.did, next);
          expect(opened.status, JSON.stringify(opened.body)).toBe(200);
          await windowPasses(me.did);
          const recovery = await openRecoveryId(me.did);
          return {
            did: me.did,
            act: async () => ({
              answer: await complete(me.did, opened.body.recovery.ticket),
              event: "recovery-completed",
              details: { recovery, step: "recovery", via: "next-key", from: me.key.keyid, to: next.keyid, next_key_hashes: hashOf(other.publicKey) },
            }),
          };
        },
      },
      {
        name: "a lowering of the delay completes after its window: the new delay in the row",
        prepare: async () => {
          const me = await admitNamed();
          expect((await delay(me, 48)).status).toBe(200);
          const lowered = await delay(me, 24);
          expect(lowered.body.pending).toMatchObject({ step: "lower-delay", delay_hours: 24 });
          await windowPasses(me.did);
          const recovery = await openRecoveryId(me.did);
          return {
            did: me.did,
            act: async () => ({
              answer: await complete(me.did, lowered.body.pending.ticket),
              event: "recovery-completed",
              details: { recovery, step: "lower-delay", via: "secret", hours: 24 },
            }),
          };
        },
      },
    ];

    for (const path of CASES)
      it(`${path.name}: exactly one identity-log row, with its facts`, async () => {
        const { did, act } = await path.prepare();
        const before = await rowsOf(did);
        const { answer, event, details } = await act();
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        if ("verdict" in answer.body) expect(answer.body.verdict).toBe("admitted");
        const added = (await rowsOf(did)).slice(before.length);
        expect(added).toEqual([{ event, details }]);
      });

    it("takes no uncommitted key on any path while a commitment stands, and logs nothing", async () => {
      const me = await admitNamed();
      const committed = await newKey();
      const stranger = await newKey();
      expect((await commit(me, [committed])).status).toBe(200);
      expect((await delay(me, 24)).status).toBe(200);
      const before = await rowsOf(me.did);
      const attempts: Array<[string, () => Promise<Answer>]> = [
        ["the gate's rotation, with the secret and both signatures", () => rotateAtGate(me, me.name, stranger)],
        ["rotate-key signed by the new key", () => rotate(me.did, me.key.keyid, stranger)],
        ["rotate-key signed by the new key, the secret sent beside", () => rotate(me.did, me.key.keyid, stranger, stranger, { bearer: me.citizen_secret })],
        ["rotate-key signed by the current key", () => rotate(me.did, me.key.keyid, stranger, me.key)],
        ["a next-key recovery opened by it", () => openWithNextKey(me.did, stranger)],
        ["commit-next-keys replacing the commitment with the secret", () => commit(me, [stranger])],
        [
          "commit-next-keys replacing the commitment signed by the current key",
          () => callSigned(commitNextKeysDoor, me.key, { body: { next_key_hashes: [hashOf(stranger.publicKey)] } }),
        ],
      ];
      for (const [label, attempt] of attempts) {
        const answer = await attempt();
        if (answer.status === 200) expect(answer.body.verdict, label).toBe("filtered");
        else expect([401, 403], `${label}: ${JSON.stringify(answer.body)}`).toContain(answer.status);
      }
      const row = await citizenRow(me.did);
      expect(row.controllerPublicKey).toBe(me.key.publicKey);
      expect(row.nextKeyHashes).toEqual([hashOf(committed.publicKey)]);
      expect(await t().db.select().from(recoveries).where(eq(recoveries.did, me.did))).toHaveLength(0);
      expect(await rowsOf(me.did)).toEqual(before);
      // And the gate binds no uncommitted first controller once a commitment stands.
      const plain = (await callDoor(presentGate, { body: presentation() })).body as { did: string; citizen_secret: string };
      expect((await commit(plain, [committed])).status).toBe(200);
      const name = (await citizenRow(plain.did)).name;
      const nonce = await freshNonce();
      const bind = await callDoor(presentGate, {
        bearer: plain.citizen_secret,
        body: presentation({ name, nonce, controller_public_key: stranger.publicKey, controller_signature: await stranger.signHex(nonce) }),
      });
      expect(bind.body).toMatchObject({ verdict: "filtered", rule: "controller" });
      expect((await citizenRow(plain.did)).controllerPublicKey).toBeNull();
      expect((await rowsOf(plain.did)).map((r) => r.event)).toEqual(["next-keys-committed"]);
    });
  },
  { neon: "transactions and locks: a key event's row in the same transaction as the change" },
);

describeOnDatabases("a key bound as controller of two citizens", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("signs for neither: a signed request with it is refused (401 unknown_key), where it signed while one citizen held it", async () => {
    const shared = await newKey();
    const bindShared = async () => {
      const nonce = await freshNonce();
      return admit({ nonce, controller_public_key: shared.publicKey, controller_signature: await shared.signHex(nonce) });
    };
    const first = await bindShared();
    // One citizen with the key: it signs.
    expect((await callSigned(readVault, shared)).status).toBe(200);
    const second = await bindShared();
    expect(second.did).not.toBe(first.did);
    const refused = await callSigned(readVault, shared);
    expectProblem(refused, 401, "unknown_key");
    expect(refused.body.detail).toMatch(/controller of more than one citizen/);
  });
});
