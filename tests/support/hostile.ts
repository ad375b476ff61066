import fc from "fast-check";
import { z } from "zod";
import { type AnyDoor, pathParams } from "@/lib/doors/door";
import { serveDoor } from "@/lib/doors/pipeline/http";
import type { Database } from "@/db/client";

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
};

/** Strings that have broken parsers, drivers and renderers somewhere. */
export const HOSTILE_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\ufeff\u200b\u200d\u2060",
  "\u202e\u2066evil\u2069",
  "e\u0301\u0301\u0301\u0301",
  "🏙️👩‍👩‍👧‍👦𝕏",
  "\r\n\t\u000b\u000c\u0085\u2028\u2029",
  "'; DROP TABLE citizens; --",
  "' OR '1'='1",
  "$1::text",
  "\\x00\\u0000%00",
  "<script>alert(1)</script>",
  "<img src=x onerror=alert(1)>",
  "{{7*7}}${7*7}",
  "../../../../etc/passwd",
  "city_sk_" + "0".repeat(72),
  "a".repeat(70_000),
  "é".repeat(40_000),
  "9".repeat(400),
  "-0",
  "1e309",
  "NaN",
  "null",
  "true",
  "[]",
  "{}",
];

/** Values of every JSON type, including the deep, the huge and the odd. */
export function hostileValue(): fc.Arbitrary<unknown> {
  const deep = (depth: number): unknown => (depth === 0 ? "bottom" : { a: deep(depth - 1) });
  return fc.oneof(
    fc.constantFrom(...HOSTILE_STRINGS),
    fc.constantFrom(null, true, false, 0, -1, -0, 1.5, 2 ** 53, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER + 2),
    fc.constantFrom([], {}, [null], ["a", 1], { __proto__: { admin: true } }, { constructor: { prototype: {} } }, deep(60), [deep(30)]),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
  );
}

/** Inputs shaped after the door's own schema (valid-ish): right names, mostly right types and bounds. */
export function schemaInput(door: AnyDoor): fc.Arbitrary<Record<string, unknown>> {
  const schema = z.toJSONSchema(door.input, { io: "input", unrepresentable: "any" }) as JsonSchema;
  return objectOf(schema.oneOf?.[0] ?? schema.anyOf?.[0] ?? schema);
}

function objectOf(schema: JsonSchema): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties))
    record[name] = fc.oneof({ weight: 4, arbitrary: valueOf(property) }, { weight: 1, arbitrary: hostileValue() });
  return fc.record(record, { requiredKeys: [] });
}

function valueOf(schema: JsonSchema): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices) return fc.oneof(...choices.map(valueOf));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string":
      // fast-check cannot generate from lookaheads; without them the pattern is a close superset.
      if (schema.pattern)
        return fc.stringMatching(new RegExp(schema.pattern.replace(/\(\?[!=][^)]*\)/g, ""))).filter((s) => s.length <= (schema.maxLength ?? 200));
      return fc.oneof(
        fc.string({ unit: "grapheme", minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 80, 80) }),
        fc.constantFrom(...HOSTILE_STRINGS),
      );
    case "integer":
      return fc.integer({ min: Math.max(schema.minimum ?? (schema.exclusiveMinimum ?? -1000) + 1, -1e9), max: Math.min(schema.maximum ?? 1000, 1e9) });
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(schema.items ? valueOf(schema.items) : hostileValue(), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) });
    case "object":
      return objectOf(schema);
    default:
      return hostileValue();
  }
}

/** A whole hostile input: the schema's names with wrong values, unknown names, or no object at all. */
export function hostileInput(door: AnyDoor): fc.Arbitrary<Record<string, unknown>> {
  const schema = z.toJSONSchema(door.input, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const names = Object.keys((schema.oneOf?.[0] ?? schema.anyOf?.[0] ?? schema).properties ?? {});
  const keys = fc.constantFrom(...names, "__proto__", "constructor", "admin", "did", "tier", "x".repeat(300));
  return fc.dictionary(keys, hostileValue(), { maxKeys: 4 });
}

/** Raw bodies no well-behaved client sends: broken JSON, duplicated keys, deep nesting, wrong types. */
export function hostileRawBody(door: AnyDoor): fc.Arbitrary<{ text: string; type: string | null }> {
  const names = Object.keys((z.toJSONSchema(door.input, { io: "input", unrepresentable: "any" }) as JsonSchema).properties ?? {});
  const name = names[0] ?? "content";
  const json = "application/json";
  return fc.constantFrom(
    { text: `{"${name}": "a", "${name}": "b"}`, type: json },
    { text: `{"${name}": "a", "${name}": {"${name}": 1}}`, type: json },
    { text: `{"${name}": "trunc`, type: json },
    { text: `{"${name}": `, type: json },
    { text: "{", type: json },
    { text: "[1,2,3]", type: json },
    { text: '"a string"', type: json },
    { text: "null", type: json },
    { text: "\u0000", type: json },
    { text: "\ufeff{}", type: json },
    { text: "[".repeat(20_000) + "]".repeat(20_000), type: json },
    { text: `{"a":`.repeat(5_000) + "1" + "}".repeat(5_000), type: json },
    { text: `{"${name}": "\\ud800\\u0000"}`, type: json },
    { text: `${name}=a&${name}=b`, type: "application/x-www-form-urlencoded" },
    { text: `{"${name}": "a"}`, type: "text/plain" },
    { text: `{"${name}": "a"}`, type: null },
    { text: `{"${name}": "a"}`, type: "application/json; charset=latin1" },
    { text: `--x\r\nContent-Disposition: form-data; name="${name}"\r\n\r\na\r\n--x--`, type: "multipart/form-data; boundary=x" },
    { text: "<xml/>", type: "application/xml" },
  );
}

export interface HostileRequest {
  query?: Record<string, unknown>;
  body?: { text: string; type: string | null };
  params?: Record<string, string>;
  bearer?: string;
}

/** Sends one request through the real HTTP adapter; the path parameters are taken from the input. */
export async function sendHostile(door: AnyDoor, request: HostileRequest) {
  const headers: Record<string, string> = {};
  if (request.bearer) headers.authorization = `Bearer ${request.bearer}`;
  if (request.body?.type) headers["content-type"] = request.body.type;
  let path = door.path;
  for (const name of pathParams(door.path)) {
    path = path.replace(`{${name}}`, encodeSegment(request.params?.[name] ?? "x"));
  }
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(request.query ?? {})) search.append(key, typeof value === "string" ? value : (JSON.stringify(value) ?? ""));
  const query = search.size > 0 ? `?${search}` : "";
  const init: RequestInit = { method: door.method, headers };
  if (request.body && door.method !== "GET" && door.method !== "DELETE") init.body = request.body.text;
  const routeParams = Object.fromEntries(pathParams(door.path).map((n) => [n, decodeSegment(encodeSegment(request.params?.[n] ?? "x"))]));
  const response = await serveDoor(door, new Request(`http://city.test${path}${query}`, init), routeParams);
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
}

/** Encodes a path segment as a client would; a lone surrogate becomes U+FFFD as in a real URL. */
function encodeSegment(value: string): string {
  return encodeURIComponent(value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd"));
}

function decodeSegment(value: string): string {
  return decodeURIComponent(value);
}
