import { type SQL, sql } from "drizzle-orm";
import type { PgDialect } from "drizzle-orm/pg-core";
import { type Database, rowsOf } from "@/db/client";

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  "Shared Hit Blocks"?: number;
  "Shared Read Blocks"?: number;
  Plans?: PlanNode[];
}

export interface StatementReads {
  /** Rows of `posts` the statement's scans produced or filtered away, every loop counted. */
  postsRows: number;
  /** The scans of `posts` that read the table in full (sequential, parallel or not). */
  postsSeqScans: number;
  /** Shared buffers the statement touched (hit or read), planning excluded. */
  buffers: number;
  /** How each scan of posts ran ("Index Only Scan posts_room_by_did", ...), for a failing test's message. */
  postsScans: string[];
  /** The plan as JSON text. */
  plan: string;
}

const ROLLED_BACK = new Error("poll plan probe: rolled back");

function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "boolean") return value ? "true" : "false";
  if (value instanceof Date) return `'${value.toISOString()}'`;
  return `'${String(value).replace(/'/g, "''")}'`;
}

/**
 * What a statement reads when it runs as a prepared statement with the plan PostgreSQL keeps for
 * it (`generic`: made without the parameters, as a named statement reused across polls; `custom`:
 * made for these values), from EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE: a measure of its
 * cost that is the same on a busy machine as on a quiet one. Runs inside a transaction that is
 * rolled back, so the statement's writes (a poll's schedule and nonce) are not kept.
 */
export async function preparedReadsOf(db: Database, statement: SQL, plan: "generic" | "custom"): Promise<StatementReads> {
  const { dialect } = db as unknown as { dialect: PgDialect };
  const query = dialect.sqlToQuery(statement);
  let explained: PlanNode | undefined;
  try {
    await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`SET LOCAL plan_cache_mode = force_${plan}_plan`));
      await tx.execute(sql.raw(`PREPARE city_poll_plan_probe AS ${query.sql}`));
      const [row] = rowsOf<Record<string, unknown>>(
        await tx.execute(sql.raw(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE city_poll_plan_probe(${query.params.map(literal).join(", ")})`)),
      );
      await tx.execute(sql.raw("DEALLOCATE city_poll_plan_probe"));
      const value = Object.values(row!)[0];
      explained = ((typeof value === "string" ? JSON.parse(value) : value) as { Plan: PlanNode }[])[0]!.Plan;
      throw ROLLED_BACK;
    });
  } catch (err) {
    if (err !== ROLLED_BACK) throw err;
  }
  const top = explained!;
  const reads = { postsRows: 0, postsSeqScans: 0, postsScans: [] as string[] };
  const visit = (node: PlanNode) => {
    if (node["Relation Name"] === "posts") {
      const loops = node["Actual Loops"] ?? 0;
      reads.postsRows += ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0)) * loops;
      if (node["Node Type"].endsWith("Seq Scan")) reads.postsSeqScans += 1;
      reads.postsScans.push(`${node["Node Type"]} ${node["Index Name"] ?? ""}`.trim());
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(top);
  return { ...reads, buffers: (top["Shared Hit Blocks"] ?? 0) + (top["Shared Read Blocks"] ?? 0), plan: JSON.stringify(top, null, 1) };
}
