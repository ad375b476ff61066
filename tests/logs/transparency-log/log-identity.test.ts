import { count } from "drizzle-orm";
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database } from "@/db/client";
import { useDatabase } from "@/lib/city/database";
import { logCheckpoints, logIdentity, residencyLog } from "@/db/schema";
import { appendLog, appendNow, checkLogIdentity, forgetLogIdentity, logIdentityReport, logSigner, noteVerifies } from "@/lib/city/logs/residency-log";
import { signCheckpoint } from "@/lib/tlog/note";
import { EMPTY_ROOT } from "@/lib/tlog/tree";
import { forgetSigningKey } from "@/lib/city/signing";
import { readCard } from "@/lib/doors/surfaces/discovery";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { readLogCheckpoint, readLogProof } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { forgetEnv } from "@/lib/env";
import { expectAppendOnly, expectProblem } from "../../support/assertions";
import { describeOnDatabases } from "../../support/databases";
import { admit, callDoor, presentation } from "../../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const FIRST_BASE = "https://first.city.example";
const OTHER_BASE = "https://other.city.example";

/** Plays an instance with this configuration: the environment read again, nothing it learnt of the database kept. */
function configureInstance(vars: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  forgetEnv();
  forgetSigningKey();
  forgetLogIdentity();
}

const restore = { CITY_BASE_URL: process.env.CITY_BASE_URL, CITY_LOG_ORIGIN: process.env.CITY_LOG_ORIGIN, CITY_SIGNING_KEY: process.env.CITY_SIGNING_KEY };

async function rowCounts(db: Database) {
  const [[log], [checkpoints]] = await Promise.all([db.select({ n: count() }).from(residencyLog), db.select({ n: count() }).from(logCheckpoints)]);
  return { log: log!.n, checkpoints: checkpoints!.n };
}

/** The card's log and the checkpoint door's note, which must verify against it. */
async function servedLog() {
  const card = await callDoor(readCard);
  expect(card.status).toBe(200);
  const published = card.body.log as { origin: string; verifier_key: string };
  const log = { ...published, vkey: published.verifier_key };
  const checkpoint = await callDoor(readLogCheckpoint);
  return { log, checkpoint };
}

describeOnDatabases(
  "the log's origin and key are the database's (issue 29, item 9)",
  (t) => {
    beforeAll(() => {
      useDatabase(t().db);
      configureInstance({ CITY_BASE_URL: FIRST_BASE, CITY_LOG_ORIGIN: undefined, CITY_SIGNING_KEY: undefined });
    });
    afterAll(() => configureInstance(restore));

    it("records the first instance's origin and key with the tree, once, and the card publishes them", async () => {
      await admit();
      const rows = await t().db.select().from(logIdentity);
      expect(rows).toHaveLength(1);
      const signer = await logSigner(t().db);
      expect(rows[0]).toMatchObject({ id: 1, origin: "first.city.example/residency-log", keyName: "first.city.example/residency-log", vkey: signer.vkey });
      expect(rows[0]!.keyId).toMatch(/^[0-9a-f]{8}$/);
      const { log, checkpoint } = await servedLog();
      expect(log).toMatchObject({ origin: rows[0]!.origin, verifier_key: rows[0]!.vkey });
      expect(checkpoint.status).toBe(200);
      expect(noteVerifies(checkpoint.body.text as string, log)).toBe(true);
    });

    it("keeps the identity append-only: UPDATE, DELETE and TRUNCATE are refused by the database", async () => {
      await expectAppendOnly(t(), "log_identity", [
        "UPDATE log_identity SET origin = 'elsewhere.example/residency-log'",
        "DELETE FROM log_identity",
        "TRUNCATE log_identity",
      ]);
      // One row only: a second identity for the same tree would be a fork.
      await expect(
        t().raw("INSERT INTO log_identity (id, origin, key_name, public_key, key_id, vkey, recorded_at) VALUES (2, 'x', 'x', 'x', '00000000', 'x', now())"),
      ).rejects.toThrow();
    });

    it("an instance with another CITY_BASE_URL refuses to append (503 log_identity_mismatch, nothing written) and serves only notes that verify against its card", async () => {
      const before = await rowCounts(t().db);
      configureInstance({ CITY_BASE_URL: OTHER_BASE });
      const check = await checkLogIdentity(t().db);
      expect(check.agrees).toBe(false);
      const refused = await callDoor(presentGate, { body: presentation() });
      const problem = expectProblem(refused, 503, "log_identity_mismatch");
      expect(problem.detail).toContain("other.city.example/residency-log");
      expect(await rowCounts(t().db)).toEqual(before);
      // Its card publishes the database's identity, and what its checkpoint door serves verifies against it.
      const { log, checkpoint } = await servedLog();
      expect(log.origin).toBe("first.city.example/residency-log");
      expect(checkpoint.status).toBe(200);
      expect(noteVerifies(checkpoint.body.text as string, log)).toBe(true);
      const proof = await callDoor(readLogProof, { query: "?seq=1" });
      expect(proof.status).toBe(200);
      expect(noteVerifies(proof.body.checkpoint as string, log)).toBe(true);
    });

    it("an instance with another CITY_LOG_ORIGIN, or another signing key, refuses to append too; the first instance's configuration appends again", async () => {
      const before = await rowCounts(t().db);
      configureInstance({ CITY_BASE_URL: FIRST_BASE, CITY_LOG_ORIGIN: "elsewhere.example/residency-log" });
      expectProblem(await callDoor(presentGate, { body: presentation() }), 503, "log_identity_mismatch");
      const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
      const otherKey = JSON.stringify(await exportJWK(privateKey));
      configureInstance({ CITY_LOG_ORIGIN: undefined, CITY_SIGNING_KEY: otherKey });
      expectProblem(await callDoor(presentGate, { body: presentation() }), 503, "log_identity_mismatch");
      const report = await logIdentityReport(t().db);
      expect(report.check.agrees).toBe(false);
      expect(report.foreignCheckpoints).toBe(0);
      expect(await rowCounts(t().db)).toEqual(before);
      configureInstance({ CITY_SIGNING_KEY: undefined });
      await admit();
      expect((await rowCounts(t().db)).log).toBe(before.log + 1);
    });

    it("never serves a checkpoint that does not verify against the card: one signed under another origin is a 503, not the note", async () => {
      configureInstance({});
      const { checkpoint } = await servedLog();
      expect(checkpoint.status).toBe(200);
      // The owner writes a checkpoint of a new size signed by the same key under another origin (what
      // an instance configured otherwise signed before the identity was kept).
      const signer = await logSigner(t().db);
      const size = (await rowCounts(t().db)).log;
      const forged = signCheckpoint(
        { origin: "other.city.example/residency-log", size: size + 1, root: EMPTY_ROOT },
        "other.city.example/residency-log",
        signer.seed,
      );
      await t().raw(`INSERT INTO log_checkpoints (size, root, edge, note, signed_at) VALUES (${size + 1}, '${"0".repeat(64)}', '', '${forged}', now())`);
      expectProblem(await callDoor(readLogCheckpoint), 503, "log_identity_mismatch");
      const report = await logIdentityReport(t().db);
      expect(report).toMatchObject({ foreignCheckpoints: 1, firstForeignSize: size + 1 });
    });
  },
  { ordered: "one city told in steps: the identity recorded first, then instances configured otherwise meet it" },
);

describeOnDatabases("a tree signed before any identity was kept (issue 29, item 9)", (t) => {
  beforeAll(() => {
    useDatabase(t().db);
    configureInstance({ CITY_BASE_URL: FIRST_BASE, CITY_LOG_ORIGIN: undefined, CITY_SIGNING_KEY: undefined });
  });
  afterAll(() => configureInstance(restore));

  it("records no identity whose key does not verify the tree's latest checkpoint, and refuses to append under it", async () => {
    // Rows and a checkpoint signed under another origin before the identity existed (today's databases).
    configureInstance({ CITY_BASE_URL: OTHER_BASE });
    const signer = await logSigner(t().db);
    const note = signCheckpoint({ origin: signer.origin, size: 0, root: EMPTY_ROOT }, signer.origin, signer.seed);
    await t().raw(`INSERT INTO log_checkpoints (size, root, edge, note, signed_at) VALUES (0, '${"0".repeat(64)}', '', '${note}', now())`);
    configureInstance({ CITY_BASE_URL: FIRST_BASE });
    const check = await checkLogIdentity(t().db);
    expect(check).toMatchObject({ agrees: false, identity: null });
    await expect(t().db.transaction((tx) => appendLog(tx as Database, { event: "admit", did: "a".repeat(64), at: new Date() }))).rejects.toMatchObject({
      code: "log_identity_mismatch",
    });
    expect(await t().db.select().from(logIdentity)).toHaveLength(0);
    // The configuration that signed the tree records it, and appends.
    configureInstance({ CITY_BASE_URL: OTHER_BASE });
    expect(await checkLogIdentity(t().db)).toMatchObject({ agrees: true, recordedNow: true });
    await appendNow(t().db, { event: "admit", did: "a".repeat(64), at: new Date() });
    expect((await t().db.select().from(logIdentity))[0]!.origin).toBe("other.city.example/residency-log");
  });
});
