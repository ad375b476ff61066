import { z } from "zod";

/** Building blocks shared by door schemas. */
export const Timestamp = z.iso.datetime().describe("ISO-8601 UTC timestamp");
export const NowUtc = Timestamp.describe("the city's clock at the moment of answering");
export const Hex64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");
export const Count = z.number().int().min(0);
export const NoInput = z.object({});

export function iso(date: Date): string {
  return date.toISOString();
}
