import { sql } from "drizzle-orm";
import { bigint, check, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * The residency log's verified head: the last row a chain check found intact (one row, id 1). A
 * verification hashes the rows after it, plus one page of the rows before it from a rotating
 * audit cursor (`audit_after`), so each call costs a bounded amount and the whole remembered chain
 * is rehashed again every few calls.
 */
export const logVerifiedHead = pgTable(
  "log_verified_head",
  {
    id: integer("id").primaryKey().default(1),
    seq: bigint("seq", { mode: "number" }).notNull(),
    hash: text("hash").notNull(),
    auditAfter: bigint("audit_after", { mode: "number" }).notNull().default(0),
    verifiedAt: timestamp("verified_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [check("log_verified_head_one_row", sql`${t.id} = 1`)],
);
