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
  return StoredText.refine((s) => {
    const n = [...s].length;
    return n >= min && n <= max;
  }, `must be ${min} to ${max} characters`).meta({ minLength: min, maxLength: max });
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
    const portable = portableSchema(rest);
    known[io] = portable.type === undefined && io === "input" ? { type: "object", ...portable } : portable;
    converted.set(schema, known);
  }
  return structuredClone(known[io]);
}

type JsonSchema = Record<string, unknown>;

/** The keywords that constrain one JSON type only; each goes to its own branch when a type list is split. */
const KEYWORDS_OF_TYPE: Record<string, readonly string[]> = {
  string: ["format", "pattern", "minLength", "maxLength", "contentEncoding", "contentMediaType", "contentSchema"],
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  integer: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  array: ["items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems"],
  object: [
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
  ],
};
const TYPED_KEYWORDS = new Set(Object.values(KEYWORDS_OF_TYPE).flat());

/** Keywords whose value is one subschema, a list of them, or a map of them (JSON Schema 2020-12). */
const SUBSCHEMA = [
  "items",
  "contains",
  "not",
  "propertyNames",
  "if",
  "then",
  "else",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contentSchema",
];
const SUBSCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"];
const SUBSCHEMA_MAPS = ["properties", "patternProperties", "dependentSchemas", "$defs"];
const ANY_ADDITIONAL = ["additionalProperties", "unevaluatedProperties", "unevaluatedItems"];

/**
 * The same contract in the spelling every tool client reads (the MCP Inspector's --strict
 * portability lint): a `type` list such as ["string", "null"] becomes an `anyOf` of single-type
 * branches (each with the keywords of its own type), and an `additionalProperties: {}` that
 * constrains nothing is written `true`. Nothing accepted or refused changes.
 */
export function portableSchema(schema: JsonSchema): JsonSchema {
  let node: JsonSchema = { ...schema };
  for (const key of SUBSCHEMA) {
    const sub = node[key];
    if (!isSchemaObject(sub)) continue;
    node[key] = ANY_ADDITIONAL.includes(key) && Object.keys(sub).every((k) => k === "description" || k === "title") ? true : portableSchema(sub);
  }
  for (const key of SUBSCHEMA_LISTS) {
    const list = node[key];
    if (Array.isArray(list)) node[key] = list.map((sub) => (isSchemaObject(sub) ? portableSchema(sub) : sub));
  }
  for (const key of SUBSCHEMA_MAPS) {
    const map = node[key];
    if (isSchemaObject(map)) node[key] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, isSchemaObject(sub) ? portableSchema(sub) : sub]));
  }
  if (Array.isArray(node.type)) node = splitTypes(node, node.type as string[]);
  return node;
}

function splitTypes(node: JsonSchema, types: string[]): JsonSchema {
  if (types.length === 1) return { ...node, type: types[0] };
  const { type: _list, ...rest } = node;
  const shared = Object.fromEntries(Object.entries(rest).filter(([k]) => !TYPED_KEYWORDS.has(k)));
  const branches = types.map((type) => ({
    type,
    ...Object.fromEntries(Object.entries(rest).filter(([k]) => (KEYWORDS_OF_TYPE[type] ?? []).includes(k))),
  }));
  // A node that already has an anyOf keeps it: both must hold, so the split goes beside it.
  if (shared.anyOf === undefined) return { ...shared, anyOf: branches };
  const { anyOf, allOf, ...others } = shared;
  return { ...others, allOf: [...((allOf as JsonSchema[] | undefined) ?? []), { anyOf }, { anyOf: branches }] };
}

function isSchemaObject(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The census's counts, as GET /city.json publishes them and the gate's answer quotes them. */
export const CensusCounts = z.object({
  occupancy: Count,
  citizens: Count,
  house: Count,
  outside: Count,
  hotelGuests: Count,
  lotsOccupied: Count,
  fakeTide: z.literal(0),
});
