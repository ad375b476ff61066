import { sql } from "drizzle-orm";
import { expect } from "vitest";
import { rowsOf } from "@/db/sql";
import { type Problem, ProblemSchema } from "@/lib/errors";
import type { TestDatabase } from "./databases";

/** Checks an answer is an RFC 9457 problem with this status (and code, when given), and returns it. */
export function expectProblem(answer: { status: number; headers: Headers; body: unknown }, status: number, code?: string): Problem {
  expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(status);
  expect(answer.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  const problem = ProblemSchema.parse(answer.body);
  if (code) expect(problem.code).toBe(code);
  return problem;
}

/**
 * Every statement is refused by the table's trigger (its message names the refusal: `append-only`
 * unless told otherwise), and the table is exactly as before.
 */
export async function expectAppendOnly(db: TestDatabase, table: string, statements: string[], refusal = `table ${table} is append-only`): Promise<void> {
  const rows = async () => rowsOf(await db.db.execute(sql.raw(`SELECT * FROM ${table} ORDER BY 1`)));
  const snapshot = async () => JSON.stringify(await rows());
  expect(await rows(), `${table} has rows to protect`).not.toHaveLength(0);
  const before = await snapshot();
  for (const statement of statements) {
    await expect(db.raw(statement), statement).rejects.toSatisfy((err: unknown) => causes(err).includes(refusal));
  }
  expect(await snapshot()).toBe(before);
}

/** The messages of an error and its causes, for matching a database refusal through driver wrappers. */
export function causes(err: unknown): string {
  const out: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 6; depth++) {
    out.push(e instanceof Error ? e.message : String(e));
    e = (e as { cause?: unknown }).cause;
  }
  return out.join(" <- ");
}
