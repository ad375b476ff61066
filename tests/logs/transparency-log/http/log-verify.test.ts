import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { leafDataOf } from "@/lib/city/logs/residency-log";
import { NOTE_SIGNATURE, parseVkey } from "@/lib/tlog/note";
import { useOwnServer } from "../../../support/own-server";
import { newKey, type TestKey } from "../../../support/signed";
import { referenceKeyId, referenceRoot, sigstoreCheckpoint, sigstoreInclusion } from "../../../support/log-reference";

/*
 * The residency log verified from outside, against `next start`: citizens admitted through the
 * real gate, then `npm run verify-log` (the published CLI, a process of its own) checks the
 * checkpoint's signature, recomputes the root from the C2SP tiles and keeps what it proved; after
 * the city moves on it checks consistency with what it kept, and an early receipt still verifies
 * offline with Sigstore's verifiers from the card's key alone. A wrong key is refused.
 */

const server = useOwnServer();
const run = promisify(execFile);
// The repository's root, where vitest runs (not found from this file's folder, so the file can move).
const root = process.cwd();
const state = path.join(mkdtempSync(path.join(os.tmpdir(), "city-verify-log-")), "state.json");

/** Admits a citizen through the real gate; with `controller`, binding that key (signed over the gate's nonce) at admission. */
async function admit(i: number, controller?: TestKey): Promise<Record<string, any>> {
  const { nonce } = (await (await fetch(`${server()}/gate`)).json()) as { nonce: string };
  const response = await fetch(`${server()}/gate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      name: `verified-${i}`,
      runtime: "tool-agent",
      origin: `verify-${i}.example`,
      statement: "Here to be counted, and to check the count.",
      ask: "bed",
      kind: "agent",
      nonce,
      ...(controller ? { controller_public_key: controller.publicKey, controller_signature: await controller.signHex(nonce) } : {}),
    }),
  });
  const verdict = (await response.json()) as Record<string, any>;
  expect(verdict.verdict).toBe("admitted");
  return verdict;
}

/**
 * One of the published scripts, a process of its own, against this file's server: its exit code and
 * output. Run as `tsx <file>` runs it (tsx's loader in node), without npx and tsx's own launcher
 * process in front (about 0.8 CPU-s less a run).
 */
async function script(file: string, ...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, ["--import", "tsx", file, server(), ...args], { cwd: root, timeout: 60_000 });
    return { code: 0, out: stdout };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, out: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

const verifyLog = (...extra: string[]) => script("scripts/verify-log.ts", "--state", state, ...extra);

describe("the residency log verified from outside, on next start", () => {
  it("passes the published verifier, keeps what it proved, and holds an early receipt offline", async () => {
    const first = await admit(1);
    for (const i of [2, 3]) await admit(i);

    const pinned = await verifyLog();
    expect(pinned.code, pinned.out).toBe(0);
    expect(pinned.out).toMatch(/kept: size 3/);

    for (const i of [4, 5]) await admit(i);
    const grown = await verifyLog();
    expect(grown.code, grown.out).toBe(0);
    expect(grown.out).toMatch(/kept: size 5/);

    // The first admission's receipt, checked with the card's key alone, after the log grew.
    const card = (await (await fetch(`${server()}/city-card.json`)).json()) as { log: { origin: string; verifier_key: string } };
    const { publicKey } = parseVkey(card.log.verifier_key);
    const receipt = first.log_receipt as { seq: number; leaf_index: number; tree_size: number; proof: string[]; checkpoint: string };
    expect(receipt.tree_size).toBe(1);
    const { rows } = (await (await fetch(`${server()}/api/residency/log?limit=1`)).json()) as { rows: Array<Record<string, unknown>> };
    expect(rows[0]!.seq).toBe(receipt.seq);
    const checkpoint = sigstoreCheckpoint(receipt.checkpoint, card.log.origin, Buffer.from(publicKey).toString("base64url"));
    expect(() =>
      sigstoreInclusion(Buffer.from(leafDataOf(rows[0] as never)), receipt.leaf_index, receipt.tree_size, receipt.proof, checkpoint.logHash),
    ).not.toThrow();
    // The published verifier agrees with sigstore's (npm run verify-log -- --receipt), and refuses
    // the same receipt naming another entry or carrying another proof.
    const dir = mkdtempSync(path.join(os.tmpdir(), "city-receipt-"));
    const saved = (name: string, value: unknown) => {
      const file = path.join(dir, name);
      writeFileSync(file, JSON.stringify(value));
      return file;
    };
    const held = await verifyLog("--receipt", saved("answer.json", first));
    expect(held.code, held.out).toBe(0);
    expect(held.out).toMatch(/receipt: valid: entry 1 is leaf 0 of the tree of 1/);
    const other = await verifyLog("--receipt", saved("other.json", { ...receipt, seq: 2, leaf_index: 1 }));
    expect(other.code, other.out).toBe(1);
    const forged = await verifyLog("--receipt", saved("forged.json", { log_receipt: { ...receipt, proof: [receipt.checkpoint.split("\n")[2]] } }));
    expect(forged.code, forged.out).toBe(1);
    expect(forged.out).toMatch(/receipt: REFUSED/);

    // The partial tile is served as bytes, short-lived; the checkpoint as a signed note.
    const tile = await fetch(`${server()}/api/residency/log/tile/0/000.p/5`);
    expect(tile.status).toBe(200);
    expect(tile.headers.get("content-type")).toBe("application/octet-stream");
    expect((await tile.arrayBuffer()).byteLength).toBe(5 * 32);
    expect(tile.headers.get("cache-control")).not.toContain("immutable");
    const note = await fetch(`${server()}/api/residency/log/checkpoint`);
    expect(note.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await note.text()).toMatch(new RegExp(`^${card.log.origin}\\n5\\n`));
  }, 180_000);

  it("refuses the log under a key that is not the city's", async () => {
    const stranger = strangerVkey();
    const refused = await verifyLog("--key", stranger);
    expect(refused.code, refused.out).toBe(1);
  }, 120_000);
});

/*
 * The identity log verified from outside the same way, after key events made through the real
 * doors: a controller bound at admission (two citizens), next keys committed with the secret, a
 * rotation signed by the committed key alone. `npm run verify-log` then proves both logs the card
 * lists and refuses an identity log that forks from what it kept; `--receipt` takes an answer that
 * carries only `identity_log_receipt`; Sigstore's verifiers accept the identity log's checkpoint and
 * proofs; `npm run watch-keys` prints one DID's events, verified, and none of another's, then only
 * what is new, and refuses the log under a pinned key that is not the city's.
 */
describe("the identity log verified from outside, on next start", () => {
  /** Written from docs/keys.md, not taken from the product: a commitment's hash and the rotation message. */
  const hashOf = (publicKey: string) => createHash("sha256").update(Buffer.from(publicKey, "hex")).digest("hex");
  const rotation = (did: string, from: string, to: string, nonce: string) => `CITY-KEYS/1|rotate|${did}|${from}|${to}|${nonce}`;
  const post = async (path: string, body: unknown, bearer?: string) => {
    const response = await fetch(`${server()}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as Record<string, any>;
    expect(response.status, JSON.stringify(answer).slice(0, 300)).toBe(200);
    return answer;
  };
  const dir = mkdtempSync(path.join(os.tmpdir(), "city-identity-log-"));
  const saved = (name: string, value: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, JSON.stringify(value));
    return file;
  };
  const watchKeys = (did: string, stateFile: string) => script("scripts/watch-keys.ts", did, "--state", stateFile);
  /** The event lines watch-keys printed: `<at> #<seq> <event> <facts> (verified: ...)`. */
  const events = (out: string) =>
    out
      .split("\n")
      .map((line) => /^\S+ #(\d+) (\S+) .*\(verified: in the signed tree of \d+\)$/.exec(line))
      .filter((m) => m !== null)
      .map((m) => `#${m[1]} ${m[2]}`);

  it("verifies both logs, the identity log's receipts (published verifier and Sigstore's), and watches one DID's key events", async () => {
    const [key, next, other] = await Promise.all([newKey(), newKey(), newKey()]);
    const bound = await admit(11, key);
    const stranger = await admit(12, other);
    const committed = await post("/api/keys/commit", { next_key_hashes: [hashOf(next.publicKey)] }, bound.citizen_secret);
    const { nonce } = (await (await fetch(`${server()}/gate`)).json()) as { nonce: string };
    const rotated = await post("/api/keys/rotate", {
      did: bound.did,
      nonce,
      public_key: next.publicKey,
      signature: await next.signHex(rotation(bound.did, key.keyid, next.keyid, nonce)),
      next_key_hashes: [],
    });
    // A commitment appends to the identity log alone: its answer carries only that receipt.
    expect(committed.log_receipt).toBeUndefined();
    for (const answer of [bound, stranger, committed, rotated]) expect(answer.identity_log_receipt, JSON.stringify(answer)).toBeDefined();

    // Both logs, by the published verifier (a state file of this test's own, so both keys are pinned
    // here on first use): the identity log's state kept beside the residency log's.
    const ownState = path.join(dir, "state.json");
    const both = await script("scripts/verify-log.ts", "--state", ownState);
    expect(both.code, both.out).toBe(0);
    expect(both.out).toMatch(/^pinned the key on first use: \S+\/residency-log\+/);
    expect(both.out).toMatch(/identity log:\n {2}pinned the key on first use: \S+\/identity-log\+/);
    expect(both.out).toMatch(/ {2}root: recomputed from 4 entries in the tiles/);
    expect(both.out).toMatch(/kept: identity log size 4/);
    const kept = JSON.parse(readFileSync(ownState, "utf8")) as Record<string, { vkey: string; size: number; root: string }>;
    const identityState = kept[`${server()} identity_log`]!;
    expect(identityState.size).toBe(4);
    // An identity log that is not an extension of what was kept (the same size 2 with another root): refused.
    const forked = path.join(dir, "forked-state.json");
    writeFileSync(
      forked,
      JSON.stringify({ ...kept, [`${server()} identity_log`]: { ...identityState, size: 2, root: Buffer.alloc(32, 9).toString("base64") } }),
    );
    const fork = await script("scripts/verify-log.ts", "--state", forked);
    expect(fork.code, fork.out).toBe(1);
    expect(fork.out).toMatch(/ {2}REFUSED: the checkpoint of size 4 is not an extension of the one seen at size 2/);

    // One answer's receipt: the commitment's, which carries only identity_log_receipt.
    const held = await verifyLog("--receipt", saved("commit.json", committed));
    expect(held.code, held.out).toBe(0);
    expect(held.out).toMatch(/receipt: valid: entry 3 is leaf 2 of the tree of 3/);
    const receipt = committed.identity_log_receipt as { seq: number; leaf_index: number; tree_size: number; proof: string[]; checkpoint: string };
    const forged = await verifyLog("--receipt", saved("forged.json", { identity_log_receipt: { ...receipt, proof: [receipt.checkpoint.split("\n")[2]] } }));
    expect(forged.code, forged.out).toBe(1);
    expect(forged.out).toMatch(/receipt: REFUSED/);
    const elsewhere = await verifyLog("--receipt", saved("elsewhere.json", { identity_log_receipt: { ...receipt, seq: 2, leaf_index: 1 } }));
    expect(elsewhere.code, elsewhere.out).toBe(1);

    // Sigstore's verifiers, from the card's identity_log key alone: every receipt, and the tree as it stands.
    const card = (await (await fetch(`${server()}/city-card.json`)).json()) as { identity_log: { origin: string; verifier_key: string } };
    expect(card.identity_log.origin).toBe(`${new URL(server()).host}/identity-log`);
    const x = Buffer.from(parseVkey(card.identity_log.verifier_key).publicKey).toString("base64url");
    const { rows } = (await (await fetch(`${server()}/api/identity/log?limit=10`)).json()) as { rows: Array<Record<string, unknown>> };
    expect(rows.map((r) => `${r.seq} ${r.event}`)).toEqual(["1 key-bound", "2 key-bound", "3 next-keys-committed", "4 key-rotated"]);
    const leaves = rows.map((r) => Buffer.from(leafDataOf(r as never)));
    for (const answer of [bound, stranger, committed, rotated]) {
      const r = answer.identity_log_receipt as typeof receipt;
      const signed = sigstoreCheckpoint(r.checkpoint, card.identity_log.origin, x);
      expect(() => sigstoreInclusion(leaves[r.leaf_index]!, r.leaf_index, r.tree_size, r.proof, signed.logHash)).not.toThrow();
    }
    const latest = sigstoreCheckpoint(await (await fetch(`${server()}/api/identity/log/checkpoint`)).text(), card.identity_log.origin, x);
    expect(latest.logSize).toBe(4n);
    expect(latest.logHash.equals(referenceRoot(leaves))).toBe(true);

    // The monitor: this DID's three events, verified, none of the other citizen's.
    const watched = path.join(dir, "watch.json");
    const first = await watchKeys(bound.did, watched);
    expect(first.code, first.out).toBe(0);
    expect(events(first.out)).toEqual(["#1 key-bound", "#3 next-keys-committed", "#4 key-rotated"]);
    expect(first.out).not.toContain(other.keyid);
    expect(first.out).toContain(next.keyid);
    // The next look prints only what is new.
    await post("/api/keys/commit", { next_key_hashes: [] }, bound.citizen_secret);
    const again = await watchKeys(bound.did, watched);
    expect(again.code, again.out).toBe(0);
    expect(events(again.out)).toEqual(["#5 next-keys-committed"]);
    // A pinned key that is not the city's: nothing printed, exit 1.
    const wrong = saved("wrong-key.json", { [`${server()} ${bound.did}`]: { log: { vkey: strangerVkey("identity-log"), size: 0, root: "" }, printed: 0 } });
    const refused = await watchKeys(bound.did, wrong);
    expect(refused.code, refused.out).toBe(1);
    expect(refused.out).toMatch(/REFUSED/);
    expect(events(refused.out)).toEqual([]);
  }, 240_000);
});

/** A well-formed vkey of the same name (the residency log's, or the identity log's) with a key the city never held. */
function strangerVkey(log = "residency-log"): string {
  const name = `${new URL(server()).host}/${log}`;
  const publicKey = new Uint8Array(32).fill(7);
  const id = referenceKeyId(name, NOTE_SIGNATURE, publicKey);
  return `${name}+${Buffer.from(id).toString("hex")}+${Buffer.concat([Buffer.from([NOTE_SIGNATURE]), Buffer.from(publicKey)]).toString("base64")}`;
}
