import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import * as ed from "@noble/ed25519";
import { afterAll, beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { parseNote, parseVkey, validCosignatures, vkeyOf } from "@/lib/tlog/note";
import { configuredWitnesses, leafDataOf, logSigner, syncWitnesses } from "@/lib/city/logs/residency-log";
import { verifyTransparencyLog, type VerifierState } from "@/lib/tlog/verifying-client";
import { createWitness, startWitnessServer, witnessVkey } from "@/lib/tlog/witness";
import { readLogCheckpoint, readLogConsistency, readLogProof, readLogTile } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { asOwner, describeOnDatabases } from "../../support/databases";
import { admit, callDoor } from "../../support/gate";
import { cityFetch } from "../../support/log-city";
import { sigstoreCheckpoint, sigstoreInclusion } from "../../support/log-reference";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const BASE = "http://city.test";
const ORIGIN = "127.0.0.1:3000/residency-log";
const dir = mkdtempSync(path.join(tmpdir(), "city-witness-"));
const witnessSeed = ed.utils.randomSecretKey();
const WITNESS = "witness.test/w1";

describeOnDatabases(
  "the residency log verified from outside: doors, receipts, verifier and a witness over the tlog-witness wire",
  (t) => {
    let server: Awaited<ReturnType<typeof startWitnessServer>>;
    let state: VerifierState | null = null;
    const admitted: Array<Record<string, any>> = [];

    beforeAll(async () => {
      useDatabase(t().db);
      const signer = await logSigner(t().db);
      expect(signer.origin).toBe(ORIGIN);
      const handle = createWitness({ name: WITNESS, seed: witnessSeed, logs: [signer.vkey], statePath: path.join(dir, `state-${t().driver}.json`) });
      server = await startWitnessServer(handle);
    });
    afterAll(async () => server?.close());
    const witnesses = () => configuredWitnesses(`${witnessVkey(WITNESS, witnessSeed)} ${server.url}`);
    const verify = async (options: { vkey?: string } = {}) => {
      const report = await verifyTransparencyLog(BASE, { ...options, state, fetch: cityFetch });
      if (report.ok) state = report.state;
      return report;
    };

    it("answers every admission with a receipt that Sigstore's verifiers accept from the published key alone", async () => {
      for (let i = 0; i < 5; i++) admitted.push(await admit());
      const signer = await logSigner(t().db);
      const x = Buffer.from(signer.publicKey).toString("base64url");
      const rows = (await callDoor((await import("@/lib/doors/declarations/logs/residency-log/residency-log")).readResidencyLog)).body.rows as Array<
        Record<string, any>
      >;
      for (const a of admitted) {
        const receipt = a.log_receipt;
        const row = rows.find((r) => r.seq === receipt.seq)!;
        expect(row.did).toBe(a.did);
        const checkpoint = sigstoreCheckpoint(receipt.checkpoint, signer.origin, x);
        expect(() =>
          sigstoreInclusion(Buffer.from(leafDataOf(row as never)), receipt.leaf_index, receipt.tree_size, receipt.proof, checkpoint.logHash),
        ).not.toThrow();
      }
      // The card publishes the key the checkpoint verifies against.
      const card = await (await cityFetch(`${BASE}/city-card.json`)).json();
      expect(card.log).toMatchObject({ origin: ORIGIN, verifier_key: signer.vkey, checkpoint: "/api/residency/log/checkpoint", tiles: "/api/residency/log/" });
      expect(parseVkey(card.log.verifier_key).publicKey).toEqual(signer.publicKey);
    });

    it("serves the checkpoint as text, proofs as JSON and refuses sizes never reached with a 400 problem", async () => {
      const checkpoint = await callDoor(readLogCheckpoint);
      expect(checkpoint.status).toBe(200);
      expect(checkpoint.headers.get("content-type")).toBe("text/plain; charset=utf-8");
      expect(checkpoint.body.text).toMatch(new RegExp(`^${ORIGIN}\\n5\\n[A-Za-z0-9+/]{43}=\\n\\n\u2014 ${ORIGIN} `));
      const proof = await callDoor(readLogProof, { query: "?seq=2&size=4" });
      expect(proof.body).toMatchObject({ seq: 2, leaf_index: 1, tree_size: 4 });
      expect(proof.body.proof).toHaveLength(2);
      for (const query of ["?seq=2&size=6", "?seq=5&size=4", "?seq=0", "?seq=x"]) expect((await callDoor(readLogProof, { query })).status, query).toBe(400);
      for (const query of ["?from=3&to=2", "?from=1&to=9", "?from=-1&to=2"]) {
        const answer = await callDoor(readLogConsistency, { query });
        expect(answer.status, query).toBe(400);
        expect(answer.headers.get("content-type")).toContain("application/problem+json");
      }
    });

    it("serves C2SP tiles: the partial tile is short-lived, a tile not reached is a 404, and the root is recomputed from them", async () => {
      const tile = await cityFetch(`${BASE}/api/residency/log/tile/0/000.p/5`);
      expect(tile.status).toBe(200);
      expect(tile.headers.get("content-type")).toBe("application/octet-stream");
      expect(tile.headers.get("cache-control")).toBe("public, max-age=60");
      expect((await tile.arrayBuffer()).byteLength).toBe(5 * 32);
      for (const p of ["0/000", "0/000.p/6", "1/000.p/1", "entries/000.p/6", "0/0", "0/x000/000.p/1", "0/000.p/0", "0/000.p/256"])
        expect((await cityFetch(`${BASE}/api/residency/log/tile/${p}`)).status, p).toBe(404);
      const report = await verify();
      expect(report.lines.join("\n")).toContain("root: recomputed from 5 entries");
      expect(report.ok).toBe(true);
    });

    it("a witness over a local socket cosigns, the city verifies and keeps the cosignature, and the checkpoint door serves it", async () => {
      const first = await syncWitnesses(t().db, new Date(), { witnesses: witnesses() });
      expect(first.witnesses).toEqual([expect.objectContaining({ witness: WITNESS, outcome: "cosigned", size: 5 })]);
      for (let i = 0; i < 3; i++) await admit();
      const second = await syncWitnesses(t().db, new Date(), { witnesses: witnesses() });
      expect(second.witnesses[0]).toMatchObject({ outcome: "cosigned", size: 8 });
      expect((await syncWitnesses(t().db, new Date(), { witnesses: witnesses() })).witnesses[0]).toMatchObject({ outcome: "current" });
      const note = parseNote((await callDoor(readLogCheckpoint)).body.text);
      expect(validCosignatures(note, parseVkey(witnessVkey(WITNESS, witnessSeed)))).toHaveLength(1);
      const report = await verify();
      expect(report.ok).toBe(true);
      expect(report.lines.join("\n")).toContain("consistency: size 8 extends the size 5 seen last time");
    });

    it("the verifier and the witness refuse a wrong key", async () => {
      const other = ed.utils.randomSecretKey();
      const wrong = vkeyOf(ORIGIN, ed.getPublicKey(other));
      const report = await verifyTransparencyLog(BASE, { vkey: wrong, state: null, fetch: cityFetch });
      expect(report.ok).toBe(false);
      expect(report.lines.at(-1)).toContain("signature does not verify");
      const stranger = createWitness({ name: "witness.test/w2", seed: other, logs: [wrong], statePath: path.join(dir, `wrong-${t().driver}.json`) });
      const body = `old 0\n\n${(await callDoor(readLogCheckpoint)).body.text}`;
      const answer = await stranger("POST", "/add-checkpoint", body);
      expect(answer.status).toBe(403);
      expect(answer.body).toContain("no valid signature");
    });

    it("the verifier names a row changed by the owner with the triggers off", async () => {
      await asOwner(t(), "residency_log", `UPDATE residency_log SET details = jsonb_set(details, '{name}', '"forged"') WHERE seq = 3`);
      const report = await verifyTransparencyLog(BASE, { state, fetch: cityFetch });
      expect(report.ok).toBe(false);
      expect(report.lines.at(-1)).toContain("log row 3 as published does not hash to its leaf");
    });

    it("a history rewritten by the owner (tree rebuilt over the changed row) is a fork: the verifier and the witness refuse it and say why", async () => {
      await asOwner(t(), "log_nodes", "DELETE FROM log_nodes");
      await asOwner(t(), "log_checkpoints", "DELETE FROM log_checkpoints");
      const report = await verifyTransparencyLog(BASE, { state, fetch: cityFetch });
      expect(report.ok).toBe(false);
      expect(report.lines.at(-1)).toContain("is not an extension of the one seen at size 8");
      const same = await syncWitnesses(t().db, new Date(), { witnesses: witnesses() });
      // The city still holds the witness's cosignature of size 8, so it sends old 8 with the forged size-8 checkpoint.
      expect(same.witnesses[0]).toMatchObject({ outcome: "current" });
      await admit();
      const grown = await syncWitnesses(t().db, new Date(), { witnesses: witnesses() });
      expect(grown.witnesses[0]).toMatchObject({ outcome: "refused" });
      expect(grown.witnesses[0]!.detail).toMatch(/^HTTP 422: fork: the checkpoint of size 9 is not consistent with the one cosigned at size 8/);
    });
  },
  { ordered: "one log that grows, is witnessed, then is tampered with" },
);

afterAll(() => rmSync(dir, { recursive: true, force: true }));
