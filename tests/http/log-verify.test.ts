import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { leafDataOf } from "@/lib/city/residency-log";
import { NOTE_SIGNATURE, parseVkey } from "@/lib/tlog/note";
import { useOwnServer } from "../support/own-server";
import { referenceKeyId, sigstoreCheckpoint, sigstoreInclusion } from "../support/log-reference";

/*
 * The residency log verified from outside, against `next start`: citizens admitted through the
 * real gate, then `npm run verify-log` (the published CLI, a process of its own) checks the
 * checkpoint's signature, recomputes the root from the C2SP tiles and keeps what it proved; after
 * the city moves on it checks consistency with what it kept, and an early receipt still verifies
 * offline with Sigstore's verifiers from the card's key alone. A wrong key is refused.
 */

const server = useOwnServer();
const run = promisify(execFile);
const root = path.resolve(__dirname, "..", "..");
const state = path.join(mkdtempSync(path.join(os.tmpdir(), "city-verify-log-")), "state.json");

async function admit(i: number): Promise<Record<string, any>> {
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
    }),
  });
  const verdict = (await response.json()) as Record<string, any>;
  expect(verdict.verdict).toBe("admitted");
  return verdict;
}

async function verifyLog(...extra: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run("npx", ["--no-install", "tsx", "scripts/verify-log.ts", server(), "--state", state, ...extra], { cwd: root, timeout: 60_000 });
    return { code: 0, out: stdout };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, out: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

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

/** A well-formed vkey of the same name with a key the city never held. */
function strangerVkey(): string {
  const name = new URL(server()).host + "/residency-log";
  const publicKey = new Uint8Array(32).fill(7);
  const id = referenceKeyId(name, NOTE_SIGNATURE, publicKey);
  return `${name}+${Buffer.from(id).toString("hex")}+${Buffer.concat([Buffer.from([NOTE_SIGNATURE]), Buffer.from(publicKey)]).toString("base64")}`;
}
