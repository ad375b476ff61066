import type { LogTables } from "@/db/schema";

/**
 * One transparency log the city keeps (docs/log.md): what this module needs to know
 * of it. The residency log (lib/city/logs/residency-log) and the identity log (lib/city/logs/identity-log)
 * are the two instances; everything else here is the same code for both.
 */
export interface LogDescriptor<E extends string = string> {
  /** How the city's messages name the log: "residency log", "identity log". */
  name: string;
  tables: LogTables;
  /** The events its rows may carry. */
  events: readonly E[];
  /** The origin this instance is configured with (the database's recorded one rules: ./identity.ts). */
  origin(): string;
  /** The variable that sets it (CITY_LOG_ORIGIN, CITY_IDENTITY_LOG_ORIGIN), named in the operator's messages. */
  originVariable: string;
  /** The field of a door's answer that carries the receipt of an append to this log. */
  receiptField: "log_receipt" | "identity_log_receipt";
  /**
   * What this module's SQL puts before the names it gives (the CTEs of an append, `log_appended`;
   * the head's lock, `head` and its columns `log_seq`...): "" for the residency log, "identity_" for
   * the identity log, so that one statement can lock both heads and append to both logs.
   */
  sqlPrefix: "" | "identity_";
}
