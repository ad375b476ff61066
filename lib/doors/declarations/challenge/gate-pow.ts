import { z } from "zod";
import { type Database } from "@/db/client";
import { bidStep, effortFromStripes, powBlock, readCeilingStripes, POW_EFFORT_HEADER, POW_PROTOCOL, POW_MAX_EFFORT } from "@/lib/city/challenge";
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
    step: z
      .object({
        seconds: z.number().int().positive().describe("a step's length: the admissions ceiling's hour cut in 12"),
        portion: z
          .number()
          .int()
          .min(0)
          .describe(
            "bid slots past the open share each step releases to bids (all but settled citizens' signatures): (bids - open) / 13, rounded down, at least one",
          ),
        left: z.number().int().min(0).describe("of them, what bids may still take in this step"),
        next_at: z.string().describe("when the next step opens (ISO 8601)"),
      })
      .nullable()
      .describe(
        "bids are served in steps (docs/pow.md), but for a settled citizen's signature: what a flood takes in one step leaves the next its own portion; null when the ceiling is off",
      ),
    note: z.string(),
  })
  .describe("CITY-POW/1: work as a priority bid past the admissions ceiling's open share (docs/pow.md)");

/** The block with the effort suggested now (one statement that writes nothing). */
export async function readPowBlock(db: Database, now: Date, config: Env = env()) {
  const limits = gateLimits(config);
  const stripes = await readCeilingStripes(db, limits, now);
  return powBlock(effortFromStripes(stripes, limits, now), limits, bidStep(stripes, limits, now));
}
