import { AsyncLocalStorage } from "node:async_hooks";
import { z } from "zod";
import type { LogReceipt } from "@/lib/tlog/append";
import type { LogDescriptor } from "./descriptor";

/** The receipts of one door's appends, by the answer's field (log_receipt, identity_log_receipt). */
export type LogReceipts = Partial<Record<LogDescriptor["receiptField"], LogReceipt>>;

/**
 * Carries the receipt of a log append from appendLog up to the door that answers, without every
 * domain function in between passing it along: the door runs its work inside `withLogReceipts`.
 * A write that appends to both logs (a first admission that binds a controller) carries both.
 */
const scope = new AsyncLocalStorage<{ receipts: LogReceipts }>();

export function recordLogReceipt(log: LogDescriptor, receipt: LogReceipt): void {
  const held = scope.getStore();
  if (held) held.receipts[log.receiptField] = receipt;
}

/** `receipts` spread into an answer gives its fields: one per log appended to, none when it appended none. */
export async function withLogReceipts<T>(work: () => Promise<T>): Promise<{ value: T; receipts: LogReceipts }> {
  const held: { receipts: LogReceipts } = { receipts: {} };
  const value = await scope.run(held, work);
  return { value, receipts: held.receipts };
}

const Base64Hash = z.string().regex(/^[A-Za-z0-9+/]{43}=$/);

export const LogReceiptSchema = z
  .object({
    seq: z.number().int().positive(),
    leaf_index: z.number().int().min(0),
    tree_size: z.number().int().positive(),
    proof: z.array(Base64Hash),
    checkpoint: z.string(),
  })
  .describe(
    "the appended log row's inclusion proof (RFC 9162, base64) in a signed C2SP checkpoint that includes it: verifiable offline with /city-card.json's log.verifier_key",
  );
