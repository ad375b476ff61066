import { z } from "zod";

/** An integer's canonical decimal form: 0, or digits without a leading zero. No sign, space, exponent, hex or fraction. */
export const CANONICAL_INT = /^(0|[1-9][0-9]*)$/;

/**
 * An integer input of a door: from a query string only in its canonical decimal
 * form (`seq=0x10`, `1e3`, `%20%205`, `+5`, `05`, `5.0` and an empty value are refused, where
 * z.coerce.number() took them), or a JSON integer (MCP and A2A arguments); within [min, max] and
 * the safe integer range. Anything else is a 400 problem naming the field.
 */
export function queryInt(min = 0, max = Number.MAX_SAFE_INTEGER) {
  const bounds = { min: Math.max(min, 0), max: Math.min(max, Number.MAX_SAFE_INTEGER) };
  const message = `must be an integer from ${bounds.min} to ${bounds.max} in canonical decimal form (digits only: no sign, spaces, leading zero, exponent or hex)`;
  const inRange = z.number().int({ error: message }).min(bounds.min, { error: message }).max(bounds.max, { error: message });
  return z.union(
    [
      inRange,
      z
        .string()
        .max(16)
        .regex(CANONICAL_INT)
        .transform((text) => Number(text))
        .pipe(inRange),
    ],
    { error: message },
  );
}
