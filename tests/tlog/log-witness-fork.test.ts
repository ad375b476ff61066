import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import * as ed from "@noble/ed25519";
import { afterEach, describe, expect, it } from "vitest";
import { b64, signCheckpoint, vkeyOf } from "@/lib/tlog/note";
import { createWitness } from "@/lib/tlog/witness";

/*
 * A fork posted straight to the reference witness (lib/tlog/witness.ts), with no city
 * in between: a checkpoint whose root differs from the one the witness already cosigned at the
 * same size is refused and the witness keeps what it held; the same root again is cosigned.
 */

const ORIGIN = "city.example/residency-log";
const LOG_SEED = new Uint8Array(32).fill(11);
const WITNESS_SEED = new Uint8Array(32).fill(12);
const root = (fill: number) => new Uint8Array(32).fill(fill);
const post = (witness: ReturnType<typeof createWitness>, old: number, size: number, rootHash: Uint8Array, proof: Uint8Array[] = []) =>
  witness(
    "POST",
    "/add-checkpoint",
    `old ${old}\n${proof.map((h) => `${b64(h)}\n`).join("")}\n${signCheckpoint({ origin: ORIGIN, size, root: rootHash }, ORIGIN, LOG_SEED)}`,
  );

describe("the reference witness, sent a fork directly", () => {
  const folders: string[] = [];
  afterEach(() => {
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  });
  const witnessWithState = () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), "city-witness-fork-"));
    folders.push(folder);
    const statePath = path.join(folder, "state.json");
    const witness = createWitness({
      name: "witness.example",
      seed: WITNESS_SEED,
      logs: [vkeyOf(ORIGIN, ed.getPublicKey(LOG_SEED))],
      statePath,
      now: () => 1_800_000_000_000,
    });
    return { witness, held: () => JSON.parse(readFileSync(statePath, "utf8"))[ORIGIN] as { size: number; root: string } };
  };

  it("refuses another root at a size it already cosigned (409, fork) and keeps the root it held", async () => {
    const { witness, held } = witnessWithState();
    expect((await post(witness, 0, 3, root(1))).status).toBe(200);
    const fork = await post(witness, 3, 3, root(2));
    expect(fork.status, fork.body).toBe(409);
    expect(fork.body).toMatch(/^fork: size 3 was cosigned with root /);
    expect(held()).toEqual({ size: 3, root: b64(root(1)) });
    // The root it cosigned, presented again at the same size, is no fork.
    const again = await post(witness, 3, 3, root(1));
    expect(again.status, again.body).toBe(200);
    expect(again.body).toMatch(/^\u2014 witness\.example /);
  });

  it("refuses a larger checkpoint whose consistency proof does not reach the root it held (422) and keeps that root", async () => {
    const { witness, held } = witnessWithState();
    expect((await post(witness, 0, 3, root(1))).status).toBe(200);
    const fork = await post(witness, 3, 5, root(3), [root(4), root(5), root(6)]);
    expect(fork.status, fork.body).toBe(422);
    expect(held()).toEqual({ size: 3, root: b64(root(1)) });
  });
});
