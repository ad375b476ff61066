import { AsyncLocalStorage } from "node:async_hooks";
import { z } from "zod";
import type { Database } from "@/db/client";
import type { LogReceipt } from "@/lib/tlog/append";
import type { LogDescriptor } from "./descriptor";
import { awaitIntegration } from "./integrate";

/** The receipts of one door's appends, by the answer's field (log_receipt, identity_log_receipt). */
export type LogReceipts = Partial<Record<LogDescriptor["receiptField"], LogReceipt>>;

/** An entry a write recorded pending, by its ticket: its receipt comes once the write committed and the entry is integrated. */
export interface LogTicket {
  log: LogDescriptor;
  ticket: string;
}

/**
 * Carries the tickets of a write's appends from appendLog up to the door that answers, without
 * every domain function in between passing them along: the pipeline runs the door inside
 * `withLogAppends` and, once the write committed, waits for each entry's integration
 * (settleLogReceipts) and puts its receipt in the answer where the receipt to come stood.
 */
const scope = new AsyncLocalStorage<{ tickets: LogTicket[] }>();

export function recordLogTicket(log: LogDescriptor, ticket: string): void {
  scope.getStore()?.tickets.push({ log, ticket });
}

const TO_COME = "receipt to come: ";

/**
 * The receipt an answer holds while its write's transaction is open (the answer is checked against
 * its schema there): the shape of a receipt, its checkpoint naming the ticket. The pipeline's settle stage replaces
 * it with the integrated receipt before anything is sent; no answer ever carries it.
 */
export function receiptToCome(log: LogDescriptor, ticket: string): LogReceipt {
  return { seq: 1, leaf_index: 0, tree_size: 1, proof: [], checkpoint: `${TO_COME}${log.receiptField} ${ticket}\n` };
}

/** The ticket a receipt to come names, or null for a real receipt. */
function ticketOf(receipt: unknown): string | null {
  const checkpoint = (receipt as { checkpoint?: unknown } | null)?.checkpoint;
  if (typeof checkpoint !== "string" || !checkpoint.startsWith(TO_COME)) return null;
  return checkpoint.slice(TO_COME.length).trim().split(" ")[1] ?? null;
}

/** Runs a door's work and gives the tickets of every append it made (nested scopes hand theirs up). */
export async function withLogAppends<T>(work: () => Promise<T>): Promise<{ value: T; tickets: LogTicket[] }> {
  const held: { tickets: LogTicket[] } = { tickets: [] };
  const value = await scope.run(held, work);
  return { value, tickets: held.tickets };
}

/**
 * `receipts` spread into an answer gives its fields: one per log appended to (its last append's
 * receipt to come), none when it appended none. The tickets stay with the enclosing scope.
 */
export async function withLogReceipts<T>(work: () => Promise<T>): Promise<{ value: T; receipts: LogReceipts }> {
  const { value, tickets } = await withLogAppends(work);
  const outer = scope.getStore();
  const receipts: LogReceipts = {};
  for (const t of tickets) {
    outer?.tickets.push(t);
    receipts[t.log.receiptField] = receiptToCome(t.log, t.ticket);
  }
  return { value, receipts };
}

/**
 * After the write committed: every entry it recorded integrated (awaitIntegration), and the
 * answer's receipts to come (its `log_receipt`, `identity_log_receipt`) replaced by their receipts.
 * A `log_seq` beside a log_receipt names the same row (the export's answer): it is set from it.
 */
export async function settleLogReceipts(db: Database, tickets: LogTicket[], body: unknown, now: Date): Promise<unknown> {
  if (tickets.length === 0) return body;
  const receipts = new Map<string, LogReceipt>();
  for (const { log, ticket } of tickets) receipts.set(ticket, await awaitIntegration(log, db, ticket, now));
  if (typeof body !== "object" || body === null || Array.isArray(body)) return body;
  const settled: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  for (const field of ["log_receipt", "identity_log_receipt"] as const) {
    const ticket = ticketOf(settled[field]);
    if (ticket === null) continue;
    const receipt = receipts.get(ticket);
    if (!receipt) throw new Error(`an answer holds the receipt to come of an entry its write did not record (${field})`);
    settled[field] = receipt;
    if (field === "log_receipt" && typeof settled.log_seq === "number") settled.log_seq = receipt.seq;
  }
  return settled;
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
