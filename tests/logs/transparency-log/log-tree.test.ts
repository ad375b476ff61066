import { asc, desc, eq, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { logCheckpoints, logHead, residencyLog } from "@/db/schema";
import { canonicalJson, sha256Hex } from "@/lib/city/canonical";
import { parseCheckpointBody, parseNote, unb64 } from "@/lib/tlog/note";
import { appendNow, consistencyProof, inclusionProof, latestCheckpoint, leafDataOf, logSigner, publishLogRow } from "@/lib/city/logs/residency-log";
import { verifyConsistency } from "@/lib/tlog/tree";
import { asOwner, describeOnDatabases } from "../../support/databases";
import { referenceRoot, sigstoreCheckpoint, sigstoreInclusion } from "../../support/log-reference";

const ROWS = 13;

describeOnDatabases(
  "the residency log as an RFC 9162 tree with C2SP checkpoints",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const leaves = async () => (await t().db.select().from(residencyLog).orderBy(asc(residencyLog.seq))).map((r) => Buffer.from(leafDataOf(publishLogRow(r))));
    const signedBy = async (note: string) => {
      const signer = await logSigner(t().db);
      return sigstoreCheckpoint(note, signer.origin, Buffer.from(signer.publicKey).toString("base64url"));
    };
    const receipts: Awaited<ReturnType<typeof appendNow>>[] = [];
    // The published row an integrated append's receipt names.
    const rowOf = async (seq: number) => publishLogRow((await t().db.select().from(residencyLog).where(eq(residencyLog.seq, seq)))[0]!);

    it("signs a checkpoint of each size when appends come one after another (each its own batch), whose root is the independent recomputation over the published rows", async () => {
      for (let i = 0; i < ROWS; i++) {
        receipts.push(
          await appendNow(t().db, {
            event: "admit",
            did: `${i}`.padStart(64, "a"),
            at: new Date(Date.UTC(2026, 0, 1, 0, i)),
            details: { name: `c${i}`, bed_id: i },
          }),
        );
      }
      const data = await leaves();
      const { checkpoint } = await latestCheckpoint(t().db);
      const verified = await signedBy(checkpoint!.note);
      expect(Number(verified.logSize)).toBe(ROWS);
      expect(verified.logHash.equals(referenceRoot(data))).toBe(true);
    });

    it("proves every row in every size, as Sigstore's verifier checks against the independently recomputed root", async () => {
      const data = await leaves();
      for (let size = 1; size <= ROWS; size++) {
        const root = referenceRoot(data.slice(0, size));
        for (let seq = 1; seq <= size; seq++) {
          const proof = await inclusionProof(t().db, seq, size);
          expect(() => sigstoreInclusion(data[seq - 1]!, seq - 1, size, proof.proof, root)).not.toThrow();
          expect((await signedBy(proof.checkpoint!)).logHash.equals(root)).toBe(true);
        }
      }
      // A proof for one row does not prove another.
      const proof = await inclusionProof(t().db, 3, ROWS);
      expect(() => sigstoreInclusion(data[3]!, 2, ROWS, proof.proof, referenceRoot(data))).toThrow();
    });

    it("proves consistency between any two sizes, and a proof between other sizes or roots fails", async () => {
      const data = await leaves();
      const roots = Array.from({ length: ROWS + 1 }, (_, n) => referenceRoot(data.slice(0, n)));
      for (let m = 0; m <= ROWS; m++) {
        for (let n = m; n <= ROWS; n++) {
          const proof = (await consistencyProof(t().db, m, n)).map(unb64);
          expect(verifyConsistency(m, n, proof, roots[m]!, roots[n]!), `${m} -> ${n}`).toBe(true);
          if (m > 0 && m < n) expect(verifyConsistency(m, n, proof, roots[m - 1]!, roots[n]!)).toBe(false);
        }
      }
      await expect(consistencyProof(t().db, 5, 4)).rejects.toMatchObject({ code: "bad_request" });
      await expect(consistencyProof(t().db, 1, ROWS + 1)).rejects.toMatchObject({ code: "bad_request" });
      await expect(inclusionProof(t().db, 1, ROWS + 1)).rejects.toMatchObject({ code: "bad_request" });
      await expect(inclusionProof(t().db, 5, 4)).rejects.toMatchObject({ code: "bad_request" });
    });

    it("gives each append a receipt that still verifies offline, with the key alone, after the city moved on", async () => {
      const first = receipts[0]!;
      const data = await leaves();
      const cp = parseCheckpointBody(parseNote(first.logReceipt.checkpoint).body);
      expect(cp.size).toBe(1);
      for (const { logReceipt: receipt } of receipts) {
        const row = await rowOf(receipt.seq);
        const verified = await signedBy(receipt.checkpoint);
        expect(() => sigstoreInclusion(Buffer.from(leafDataOf(row)), receipt.leaf_index, receipt.tree_size, receipt.proof, verified.logHash)).not.toThrow();
        expect(Buffer.from(leafDataOf(row)).equals(data[row.seq - 1]!)).toBe(true);
      }
    });

    it("builds the tree over rows written before it existed, once, at the next append", async () => {
      await asOwner(t(), "log_nodes", "DELETE FROM log_nodes");
      await asOwner(t(), "log_checkpoints", "DELETE FROM log_checkpoints");
      // As migration 0023 leaves the head of such a log: no edge, since no checkpoint holds one.
      await t().db.execute(sql`UPDATE log_head SET edge = NULL`);
      await appendNow(t().db, { event: "exit", did: "b".repeat(64), at: new Date(Date.UTC(2026, 0, 2)), details: { bed_released: 1 } });
      const data = await leaves();
      const { checkpoint } = await latestCheckpoint(t().db);
      expect((await signedBy(checkpoint!.note)).logHash.equals(referenceRoot(data))).toBe(true);
      const proof = await inclusionProof(t().db, 4, ROWS);
      expect(() => sigstoreInclusion(data[3]!, 3, ROWS, proof.proof, referenceRoot(data.slice(0, ROWS)))).not.toThrow();
    });

    it("moves the head with every row, the city's or one imported without a checkpoint, and chains the next append to it", async () => {
      const head = async () => (await t().db.select().from(logHead))[0]!;
      const [last] = await t().db.select().from(residencyLog).orderBy(desc(residencyLog.seq)).limit(1);
      expect(await head()).toMatchObject({ seq: last!.seq, hash: last!.hash, at: last!.at });
      expect((await head()).edge).toBe((await t().db.select().from(logCheckpoints).where(eq(logCheckpoints.size, last!.seq)))[0]!.edge);
      // An import (as scripts/bench-log.ts writes a large log): a row with no checkpoint of its size.
      const seq = last!.seq + 1;
      const at = new Date(Date.UTC(2026, 0, 3));
      const hash = sha256Hex(canonicalJson({ seq, event: "admit", did: "c".repeat(64), at: at.toISOString(), prev_hash: last!.hash }));
      await t()
        .db.insert(residencyLog)
        .values({ seq, event: "admit", did: "c".repeat(64), at, details: {}, prevHash: last!.hash, hash });
      expect(await head()).toMatchObject({ seq, hash, at, edge: null });
      const next = await appendNow(t().db, { event: "exit", did: "c".repeat(64), at: new Date(Date.UTC(2026, 0, 4)), details: { bed_released: null } });
      const nextRow = await rowOf(next.logReceipt.seq);
      expect(nextRow).toMatchObject({ seq: seq + 1, prev_hash: hash });
      expect(await head()).toMatchObject({ seq: seq + 1, hash: nextRow.hash, edge: expect.stringMatching(/^([0-9a-f]{64})+$/) });
      const data = await leaves();
      const proof = await inclusionProof(t().db, seq, seq + 1);
      expect(() => sigstoreInclusion(data[seq - 1]!, seq - 1, seq + 1, proof.proof, referenceRoot(data))).not.toThrow();
    });
  },
  { ordered: "one growing log" },
);
