import { z } from "zod";

/** Building blocks shared by door schemas. */
export const Timestamp = z.iso.datetime().describe("ISO-8601 UTC timestamp");
export const NowUtc = Timestamp.describe("the city's clock at the moment of answering");
export const Hex64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");
/** Hex of a fixed length, accepted in any case and kept lowercase (keys, signatures, nonces). */
export function lowerHex(length: number, what?: string) {
  return z
    .string()
    .transform((s) => s.toLowerCase())
    .pipe(z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`), `${what ? `${what} ` : ""}must be ${length} hex characters`));
}

/**
 * Every string the city stores or compares in SQL: PostgreSQL text holds no NUL (SQLSTATE 22021)
 * and a lone surrogate has no UTF-8 bytes (22P05), so both are a 400 here, never a 500 there.
 */
export const StoredText = z
  .string()
  .refine((text) => !text.includes("\u0000"), "must not contain the NUL character (U+0000): the city cannot store it")
  .refine((text) => !/[\uD800-\uDFFF]/u.test(text), "must be valid Unicode: a lone surrogate (invalid UTF-16) cannot be stored");

export const Count = z.number().int().min(0);
export const NoInput = z.object({});

/** Length in characters (code points, as JSON Schema counts them), not UTF-16 units. */
export function characters(min: number, max: number) {
  return StoredText
    .refine((s) => {
      const n = [...s].length;
      return n >= min && n <= max;
    }, `must be ${min} to ${max} characters`)
    .meta({ minLength: min, maxLength: max });
}

export function iso(date: Date): string {
  return date.toISOString();
}

/** Doors never change while the city runs: each schema is converted once, then copied per use. */
const converted = new WeakMap<z.ZodType, Partial<Record<"input" | "output", Record<string, unknown>>>>();

/** A door schema as JSON Schema (no `$schema` member), for tool and skill descriptions. */
export function doorJsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const known = converted.get(schema) ?? {};
  if (!known[io]) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;
    // A tool's arguments are an object; a door taking one of several shapes (the gate) is a oneOf of objects.
    known[io] = rest.type === undefined && io === "input" ? { type: "object", ...rest } : rest;
    converted.set(schema, known);
  }
  return structuredClone(known[io]);
}
