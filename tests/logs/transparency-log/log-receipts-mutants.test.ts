import { describe, expect, it } from "vitest";
import { identityLog } from "@/lib/city/logs/identity-log";
import { type LogReceipt, LogReceiptSchema, residencyLog } from "@/lib/city/logs/residency-log";
import { settleLogReceipts, withLogAppends, withLogReceipts } from "@/lib/city/logs/transparency-log";
import { receiptToCome, recordLogTicket } from "@/lib/city/logs/transparency-log/receipts";

/** The log receipt carrier and its published schema (lib/city/logs/transparency-log/receipts.ts), fixed cases. */
const HASH = `${"A".repeat(42)}Q=`;
const RECEIPT = { seq: 3, leaf_index: 2, tree_size: 3, proof: [HASH], checkpoint: "c\n" } as unknown as LogReceipt;

describe("the receipt of a log append", () => {
  it("reaches the door that ran the work, and only it: its ticket, and a receipt to come in the answer's field", async () => {
    recordLogTicket(residencyLog.log, "t0"); // outside any door: kept nowhere
    expect(await withLogReceipts(async () => 7)).toEqual({ value: 7, receipts: {} });
    const [a, b] = await Promise.all([
      withLogReceipts(async () => {
        await new Promise((r) => setTimeout(r, 5));
        recordLogTicket(residencyLog.log, "ta");
        return "a";
      }),
      withLogReceipts(async () => {
        recordLogTicket(residencyLog.log, "tb");
        return "b";
      }),
    ]);
    expect(a).toEqual({ value: "a", receipts: { log_receipt: receiptToCome(residencyLog.log, "ta") } });
    expect(b).toEqual({ value: "b", receipts: { log_receipt: receiptToCome(residencyLog.log, "tb") } });
  });

  it("is a field of the answer only when there is one, named by its log", async () => {
    expect({ ...(await withLogReceipts(async () => 0)).receipts }).toEqual({});
    const both = await withLogReceipts(async () => {
      recordLogTicket(residencyLog.log, "r");
      recordLogTicket(identityLog.log, "i");
      return 0;
    });
    expect({ ...both.receipts }).toEqual({ log_receipt: receiptToCome(residencyLog.log, "r"), identity_log_receipt: receiptToCome(identityLog.log, "i") });
  });

  it("hands every ticket of the work up to the door's scope, nested scopes' included, in order", async () => {
    const door = await withLogAppends(async () => {
      await withLogReceipts(async () => recordLogTicket(identityLog.log, "x"));
      recordLogTicket(residencyLog.log, "y");
      return 1;
    });
    expect(door.value).toBe(1);
    expect(door.tickets.map((t) => [t.log.name, t.ticket])).toEqual([
      ["identity log", "x"],
      ["residency log", "y"],
    ]);
  });

  it("holds a receipt to come that the answer's schema takes (the answer is checked inside the write), naming its ticket", async () => {
    const toCome = receiptToCome(identityLog.log, "0b8e6a8e-6f0e-4d3c-9d53-5b0c1c0e2f11");
    expect(LogReceiptSchema.safeParse(toCome).success).toBe(true);
    expect(toCome.checkpoint).toBe("receipt to come: identity_log_receipt 0b8e6a8e-6f0e-4d3c-9d53-5b0c1c0e2f11\n");
    // A read, or a write that appended nothing: its answer is the door's own, untouched.
    const body = { a: 1, log_receipt: RECEIPT };
    expect(await settleLogReceipts(null as never, [], body, new Date())).toBe(body);
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
