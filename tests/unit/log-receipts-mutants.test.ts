import { describe, expect, it } from "vitest";
import { identityLog } from "@/lib/city/identity-log";
import { type LogReceipt, LogReceiptSchema, residencyLog } from "@/lib/city/residency-log";
import { withLogReceipts } from "@/lib/city/transparency-log";

/** The log receipt carrier and its published schema (lib/city/transparency-log/receipts.ts), fixed cases. */
const HASH = `${"A".repeat(42)}Q=`;
const RECEIPT = { seq: 3, leaf_index: 2, tree_size: 3, proof: [HASH], checkpoint: "c\n" } as unknown as LogReceipt;

describe("the receipt of a log append", () => {
  it("reaches the door that ran the work, and only it", async () => {
    residencyLog.recordReceipt(RECEIPT); // outside any door: kept nowhere
    expect(await withLogReceipts(async () => 7)).toEqual({ value: 7, receipts: {} });
    const other = { ...RECEIPT, seq: 4 } as LogReceipt;
    const [a, b] = await Promise.all([
      withLogReceipts(async () => {
        await new Promise((r) => setTimeout(r, 5));
        residencyLog.recordReceipt(RECEIPT);
        return "a";
      }),
      withLogReceipts(async () => {
        residencyLog.recordReceipt(other);
        return "b";
      }),
    ]);
    expect(a).toEqual({ value: "a", receipts: { log_receipt: RECEIPT } });
    expect(b).toEqual({ value: "b", receipts: { log_receipt: other } });
  });

  it("is a field of the answer only when there is one, named by its log", async () => {
    expect({ ...(await withLogReceipts(async () => 0)).receipts }).toEqual({});
    const both = await withLogReceipts(async () => {
      residencyLog.recordReceipt(RECEIPT);
      identityLog.recordReceipt({ ...RECEIPT, seq: 9 } as LogReceipt);
      return 0;
    });
    expect({ ...both.receipts }).toEqual({ log_receipt: RECEIPT, identity_log_receipt: { ...RECEIPT, seq: 9 } });
  });

  it("has a schema that takes a receipt and refuses one out of shape", () => {
    expect(LogReceiptSchema.safeParse(RECEIPT).success).toBe(true);
    expect(LogReceiptSchema.safeParse({ ...RECEIPT, leaf_index: 0, proof: [] }).success).toBe(true);
    for (const bad of [
      { ...RECEIPT, seq: 0 },
      { ...RECEIPT, seq: 1.5 },
      { ...RECEIPT, leaf_index: -1 },
      { ...RECEIPT, leaf_index: 0.5 },
      { ...RECEIPT, tree_size: 0 },
      { ...RECEIPT, tree_size: 2.5 },
      { ...RECEIPT, proof: [HASH.slice(1)] },
      { ...RECEIPT, proof: [`${HASH}A`] },
      { ...RECEIPT, proof: [`x${HASH}`] },
      { ...RECEIPT, proof: [`${"A".repeat(42)}Q`] },
      { ...RECEIPT, proof: [`${"A".repeat(41)}-Q=`] },
      { ...RECEIPT, checkpoint: 1 },
    ]) {
      expect(LogReceiptSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    expect(LogReceiptSchema.description).toBe(
      "the appended log row's inclusion proof (RFC 9162, base64) in a signed C2SP checkpoint that includes it: verifiable offline with /city-card.json's log.verifier_key",
    );
  });
});
