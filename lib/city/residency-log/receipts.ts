import { AsyncLocalStorage } from "node:async_hooks";
import { z } from "zod";
import type { LogReceipt } from "@/lib/tlog/append";

/**
 * Carries the receipt of a log append from appendLog up to the door that answers, without every
 * domain function in between passing it along: the door runs its work inside `withLogReceipt`.
 */
const scope = new AsyncLocalStorage<{ receipt: LogReceipt | null }>();

export function recordLogReceipt(receipt: LogReceipt): void {
  const held = scope.getStore();
  if (held) held.receipt = receipt;
}

export async function withLogReceipt<T>(work: () => Promise<T>): Promise<{ value: T; logReceipt: LogReceipt | null }> {
  const held: { receipt: LogReceipt | null } = { receipt: null };
  const value = await scope.run(held, work);
  return { value, logReceipt: held.receipt };
}

/** The field an answer that appended a log row carries (absent when it appended none). */
export function receiptField(receipt: LogReceipt | null): { log_receipt?: LogReceipt } {
  return receipt ? { log_receipt: receipt } : {};
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
