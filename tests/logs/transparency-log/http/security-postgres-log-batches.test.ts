import { expect, it, vi } from "vitest";
import type { LogReceipt } from "@/lib/tlog/append";
import { parseVkey } from "@/lib/tlog/note";
import { verifyReceipt, verifyTransparencyLog } from "@/lib/tlog/verifying-client";
import { presentation } from "../../../support/gate";
import { newKey } from "../../../support/signed";
import { sigstoreCheckpoint, sigstoreInclusion } from "../../../support/log-reference";
import { type Answer, describeOnServer, usePostgresCity, useSecondInstance } from "../../../support/postgres-city";
import { HEAVY_TEST_MS } from "../../../support/limits";

/*
 * Issue 42, direction 4, through real HTTP: two `next start` instances on one PostgreSQL database
 * (node-postgres) admit in parallel, every fourth admission binding a controller (an identity log
 * entry too). No write locks a log's head: each records its entries pending and, after its commit,
 * whoever takes the head integrates every pending entry under ONE checkpoint. Measured by work, not
 * time: one gap-free chain per log (the outside verifier over tiles and checkpoint), every answer's
 * receipt verifying offline from the card's key alone (ours, and Sigstore's verifiers), nothing left
 * pending, and fewer checkpoints than appends (rows of the checkpoints tables).
 */

const ADMISSIONS = 40;
// Parallel admissions through two servers: work counted, not timed, on a machine that may be busy.
vi.setConfig({ testTimeout: HEAVY_TEST_MS });
const ENV = {
  CITY_DB_DRIVER: "pg",
  CITY_GATE_PER_ADDRESS_PER_HOUR: "0",
  CITY_GATE_PER_ORIGIN_PER_HOUR: "100000",
  CITY_GATE_ADMISSIONS_PER_HOUR: "100000",
};

describeOnServer("admissions on two `next start` instances over one PostgreSQL database integrate in batches (issue 42, direction 4)", () => {
  const city = usePostgresCity("log-batches", ENV);
  const other = useSecondInstance(city, ENV);

  const base = (i: number) => (i % 2 ? other().baseUrl : city().server.baseUrl);
  async function call(i: number, path: string, init: RequestInit = {}): Promise<Answer> {
    const response = await fetch(`${base(i)}${path}`, init);
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    return { status: response.status, type, headers: response.headers, body: text && type.includes("json") ? JSON.parse(text) : { text } };
  }
  /** A first admission at instance i % 2; every fourth binds a controller over the gate's nonce (an identity log entry). */
  async function admit(i: number): Promise<Answer> {
    const shown = { name: `batched-${i}`, origin: `batch-${i}-${Date.now()}.example` };
    let body: Record<string, unknown> = presentation(shown);
    if (i % 4 === 0) {
      const { nonce } = (await call(i, "/gate")).body as { nonce: string };
      const key = await newKey();
      body = presentation({ ...shown, nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) });
    }
    return call(i, "/gate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  }
  /** Every entry of a log as the outside verifier proves it (checkpoint signature, tiles, root), by seq. */
  async function provenEntries(log: "log" | "identity_log"): Promise<{ ok: boolean; lines: string[]; data: Uint8Array[] }> {
    const data: Uint8Array[] = [];
    const report = await verifyTransparencyLog(city().server.baseUrl, { log, state: null, onEntry: (index, leaf) => (data[index] = leaf) });
    return { ok: report.ok, lines: report.lines, data };
  }

  it(`chains ${ADMISSIONS} parallel admissions through two instances into one gap-free log per log, with fewer checkpoints than appends, every receipt verifying offline`, async () => {
    const counts = async () => ({
      rows: await city().count("residency_log"),
      checkpoints: await city().count("log_checkpoints"),
      identityRows: await city().count("identity_log"),
      identityCheckpoints: await city().count("identity_log_checkpoints"),
    });
    const before = await counts();
    const answers = await Promise.all(Array.from({ length: ADMISSIONS }, (_, i) => admit(i)));
    for (const a of answers) expect(a.body.verdict, JSON.stringify(a.body).slice(0, 300)).toBe("admitted");
    const after = await counts();
    const bound = answers.filter((a) => a.body.identity_log_receipt);
    expect(bound).toHaveLength(ADMISSIONS / 4);
    // Every entry integrated: as many rows as admissions, nothing left pending.
    expect(after.rows - before.rows).toBe(ADMISSIONS);
    expect(after.identityRows - before.identityRows).toBe(ADMISSIONS / 4);
    expect((await city().count("log_pending")) + (await city().count("identity_log_pending"))).toBe(0);
    // Batches: the parallel admissions shared checkpoints (one signature per batch, not per append).
    const signed = after.checkpoints - before.checkpoints;
    console.log(
      `log batches: ${ADMISSIONS} appends, ${signed} checkpoints; identity log: ${ADMISSIONS / 4} appends, ${after.identityCheckpoints - before.identityCheckpoints} checkpoints`,
    );
    expect(signed).toBeGreaterThanOrEqual(1);
    expect(signed).toBeLessThan(ADMISSIONS);
    expect(after.identityCheckpoints - before.identityCheckpoints).toBeLessThanOrEqual(ADMISSIONS / 4);

    // One gap-free chain: seqs 1..n, each row's prev_hash the hash of the row before (no fork).
    const chain = (await city().psql("SELECT seq || ' ' || prev_hash || ' ' || hash FROM residency_log ORDER BY seq"))
      .split("\n")
      .map((line) => line.split(" "));
    chain.forEach(([seq, prev, hash], i) => {
      expect(Number(seq)).toBe(i + 1);
      if (i > 0) expect(prev).toBe(chain[i - 1]![2]);
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
    });
    expect(new Set(answers.map((a) => (a.body.log_receipt as LogReceipt).seq)).size).toBe(ADMISSIONS);

    // The outside verifier proves both logs from their tiles and checkpoints, and every receipt verifies offline.
    const card = (await call(0, "/city-card.json")).body as {
      log: { origin: string; verifier_key: string };
      identity_log: { origin: string; verifier_key: string };
    };
    for (const [log, field, key] of [
      ["log", "log_receipt", card.log],
      ["identity_log", "identity_log_receipt", card.identity_log],
    ] as const) {
      const proven = await provenEntries(log);
      expect(proven.ok, proven.lines.join("\n")).toBe(true);
      for (const answer of answers.filter((a) => a.body[field])) {
        const receipt = answer.body[field] as LogReceipt;
        const leaf = proven.data[receipt.seq - 1]!;
        expect(verifyReceipt(receipt, leaf, key.verifier_key), `${field} ${receipt.seq}`).toMatchObject({ ok: true });
        // Sigstore's verifiers (an implementation not ours) accept the batch's checkpoint and the proof against it.
        const x = Buffer.from(parseVkey(key.verifier_key).publicKey).toString("base64url");
        const checkpoint = sigstoreCheckpoint(receipt.checkpoint, key.origin, x);
        expect(Number(checkpoint.logSize)).toBe(receipt.tree_size);
        expect(() => sigstoreInclusion(Buffer.from(leaf), receipt.leaf_index, receipt.tree_size, receipt.proof, checkpoint.logHash)).not.toThrow();
      }
    }
  });

  it("integrates what a writer left pending after its commit (a crash before integration) at the next admission, on the other instance", async () => {
    // As a writer that crashed between its commit and the integration: an entry recorded pending, no one waiting for it.
    const rowsBefore = await city().count("residency_log");
    await city().psql(
      `INSERT INTO log_pending (ticket, event, did, at, details) VALUES (gen_random_uuid(), 'exit', '${"c".repeat(64)}', now(), '{"bed_released": null}'::jsonb)`,
    );
    expect(await city().count("log_pending")).toBe(1);
    const next = await admit(1);
    expect(next.body.verdict).toBe("admitted");
    expect(await city().count("log_pending")).toBe(0);
    expect(await city().count("residency_log")).toBe(rowsBefore + 2);
    expect(await city().psql(`SELECT event FROM residency_log WHERE seq = ${rowsBefore + 1}`)).toBe("exit");
    expect((next.body.log_receipt as LogReceipt).seq).toBe(rowsBefore + 2);
  });
});
