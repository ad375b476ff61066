import { type Query, type SQL, sql } from "drizzle-orm";
import type { PgDialect } from "drizzle-orm/pg-core";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

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
  /** Every table some node reads by sequential scan (parallel or not), once per node. */
  seqScanned: string[];
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

/** The same plan as text, each node with its buffers (scripts/bench-poll.ts --plan). */
export async function preparedPlanText(db: Database, statement: SQL | Query, plan: "generic" | "custom"): Promise<string> {
  return (await explainPrepared(db, statement, plan, "COSTS OFF")).map((row) => String(Object.values(row)[0])).join("\n");
}

/** EXPLAIN (ANALYZE, BUFFERS, ...) EXECUTE of the statement prepared with the plan asked for, rolled back. */
async function explainPrepared(db: Database, statement: SQL | Query, plan: "generic" | "custom", format: string): Promise<Record<string, unknown>[]> {
  const { dialect } = db as unknown as { dialect: PgDialect };
  const query = "getSQL" in statement ? dialect.sqlToQuery(statement) : statement;
  let rows: Record<string, unknown>[] = [];
  try {
    await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`SET LOCAL plan_cache_mode = force_${plan}_plan`));
      await tx.execute(sql.raw(`PREPARE city_poll_plan_probe AS ${query.sql}`));
      rows = rowsOf<Record<string, unknown>>(
        await tx.execute(sql.raw(`EXPLAIN (ANALYZE, BUFFERS, ${format}) EXECUTE city_poll_plan_probe(${query.params.map(literal).join(", ")})`)),
      );
      // A prepared statement outlives the transaction: dropped here, on the connection that made it.
      await tx.execute(sql.raw("DEALLOCATE city_poll_plan_probe"));
      throw ROLLED_BACK;
    });
  } catch (err) {
    if (err !== ROLLED_BACK) throw err;
  }
  return rows;
}

/**
 * What a statement reads when it runs as a prepared statement with the plan PostgreSQL keeps for
 * it (`generic`: made without the parameters, as a named statement reused across polls; `custom`:
 * made for these values), from EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE: a measure of its
 * cost that is the same on a busy machine as on a quiet one. Runs inside a transaction that is
 * rolled back, so the statement's writes (a poll's schedule and nonce) are not kept.
 */
export async function preparedReadsOf(db: Database, statement: SQL | Query, plan: "generic" | "custom"): Promise<StatementReads> {
  const [row] = await explainPrepared(db, statement, plan, "FORMAT JSON");
  const value = Object.values(row!)[0];
  const explained = ((typeof value === "string" ? JSON.parse(value) : value) as { Plan: PlanNode }[])[0]!.Plan;
  const top = explained!;
  const reads = { postsRows: 0, postsSeqScans: 0, postsScans: [] as string[], seqScanned: [] as string[] };
  const visit = (node: PlanNode) => {
    if (node["Node Type"].endsWith("Seq Scan") && node["Relation Name"]) reads.seqScanned.push(node["Relation Name"]);
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

/**
 * The statement pollWhileBound sends for these values, caught before it is sent (nothing runs): how
 * the benchmark reads the poll of whichever version of the code it runs against.
 */
export async function capturePollQuery(db: Database, poll: (db: Database) => Promise<unknown>): Promise<Query> {
  let caught: Query | undefined;
  const stop = new Error("poll query captured");
  const session = (db as unknown as { session: object }).session;
  const catching = new Proxy(session, {
    get: (target, key, receiver) =>
      key === "prepareQuery"
        ? (query: Query) => {
            caught = query;
            return { execute: () => Promise.reject(stop) };
          }
        : Reflect.get(target, key, receiver),
  });
  const spy = new Proxy(db, { get: (target, key, receiver) => (key === "session" ? catching : Reflect.get(target, key, receiver)) });
  await poll(spy).catch((err: unknown) => {
    if (err !== stop) throw err;
  });
  if (!caught) throw new Error("the poll sent no prepared statement (CITY_PREPARED_STATEMENTS=0?)");
  return caught;
}
