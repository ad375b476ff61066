import { z } from "zod";
import { type Database } from "@/db/client";
import { powBlock, readSuggestedEffort, POW_EFFORT_HEADER, POW_PROTOCOL, POW_MAX_EFFORT } from "@/lib/city/challenge";
import { type Env, env } from "@/lib/env";
import { gateLimits } from "./gate-shares";

/** The `pow` block of GET /gate and /api/capabilities (CITY-POW/1, docs/pow.md). */
export const PowBlockSchema = z
  .object({
    protocol: z.literal(POW_PROTOCOL),
    suggested_effort: z.number().int().min(0).max(POW_MAX_EFFORT).describe("leading zero bits a bid needs now; 0: no work asked"),
    max_effort: z.literal(POW_MAX_EFFORT).describe("the most the gate ever suggests"),
    field: z.literal("pow_solution"),
    header: z.literal(POW_EFFORT_HEADER).describe("the header every answer that publishes the suggested effort carries it in"),
    docs: z.string(),
    note: z.string(),
  })
  .describe("CITY-POW/1: work as a priority bid past the admissions ceiling's open share (docs/pow.md)");

/** The block with the effort suggested now (one statement that writes nothing). */
export async function readPowBlock(db: Database, now: Date, config: Env = env()) {
  const limits = gateLimits(config);
  return powBlock(await readSuggestedEffort(db, limits, now), limits);
}
