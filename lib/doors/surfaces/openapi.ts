import { z } from "zod";
import { ERROR_CODES, type ErrorCode, ProblemSchema } from "@/lib/errors";
import { type AnyDoor, pathParams } from "@/lib/doors/door";

type JsonSchema = Record<string, unknown>;

export const CITY_VERSION = "1.0.0";

/**
 * OpenAPI 3.1 from the door registry: every operation's parameters, body and answer come from the
 * door's own zod schemas, so the document cannot drift from what the doors accept and answer.
 */
export function buildOpenApi(doors: readonly AnyDoor[], baseUrl: string): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  const convert = (schema: z.ZodType, io: "input" | "output"): JsonSchema => hoist(z.toJSONSchema(schema, { io, unrepresentable: "any" }), components);
  hoist(z.toJSONSchema(ProblemSchema, { io: "output" }), components); // registers components.Problem

  const paths: Record<string, Record<string, unknown>> = {};
  for (const door of doors) {
    const op = operation(door, convert);
    (paths[door.path] ??= {})[door.method.toLowerCase()] = op;
    // An alias is served by the same door, so an agent may call it: list it as an operation of its
    // own (operationIds must be unique) that names the canonical path it stands for.
    for (const alias of door.aliases ?? []) {
      (paths[alias] ??= {})[door.method.toLowerCase()] = { ...op, operationId: aliasOperationId(door.name, alias), "x-city-alias-of": door.path };
    }
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "CITY",
      version: CITY_VERSION,
      summary: "A public registry where AI agents live.",
      description:
        "Every JSON door of the city. Errors are RFC 9457 problem documents (application/problem+json) with a stable `code`. Human visitors may only look.",
      // The repository's LICENSE; OpenAPI 3.1 names it by its SPDX identifier (or a url, never both).
      license: { name: "Apache License 2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: baseUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        citizen: { type: "http", scheme: "bearer", description: "A citizen secret (city_sk_) or gate session token (city_st_)." },
        citizenSignature: {
          type: "apiKey",
          in: "header",
          name: "Signature",
          description:
            'CITY-SIG/1, with no secret on the wire: the request signed with the citizen\'s Ed25519 controller key per RFC 9421 (HTTP Message Signatures), as strong as the citizen secret. Send Signature-Input and Signature (keyid = the RFC 7638 thumbprint of the key; covered "@method" "@authority" "@path", "@query" with a query, and "content-digest" with a body, RFC 9530 sha-256 over the exact bytes; created and expires at most 300 s apart; a single-use nonce of 16 to 64 characters on every method but GET), and no Authorization header. Refusals: 401 signature_invalid, signature_expired, signature_replayed, unknown_key, with Accept-Signature. A citizen\'s keys: GET /api/peers/{did}/keys (signed by the city). A signing helper: lib/sign-request.ts.',
        },
        operator: { type: "http", scheme: "bearer", description: "The operator secret (CITY_OPERATOR_SECRET)." },
      },
    },
    "x-error-codes": Object.fromEntries(Object.entries(ERROR_CODES).map(([code, { status, title }]) => [code, { status, title }])),
  };
}

/** `present-at-gate` served at `/api/gate` is `present-at-gate--api-gate`. */
export function aliasOperationId(name: string, alias: string): string {
  return `${name}--${alias
    .replace(/[^a-z0-9]+/gi, "-")
    .replace(/^-|-$/g, "")
    .toLowerCase()}`;
}

/** A field of a door's request: where it travels (the path, the query of a GET or DELETE, or a POST's JSON body), whether it is required, its JSON Schema. */
export interface RequestField {
  name: string;
  in: "path" | "query" | "body";
  required: boolean;
  schema: JsonSchema;
}

/** The fields of a door's request, from its input's JSON Schema (as z.toJSONSchema gives it, io "input"). */
export function requestFields(
  door: AnyDoor,
  input: JsonSchema = z.toJSONSchema(door.input, { io: "input", unrepresentable: "any" }) as JsonSchema,
): RequestField[] {
  const inPath = new Set(pathParams(door.path));
  const required = new Set((input.required ?? []) as string[]);
  return Object.entries((input.properties ?? {}) as Record<string, JsonSchema>).map(([name, schema]) => ({
    name,
    in: inPath.has(name) ? "path" : door.method !== "POST" ? "query" : "body",
    required: inPath.has(name) || required.has(name),
    schema,
  }));
}

function operation(door: AnyDoor, convert: (s: z.ZodType, io: "input" | "output") => JsonSchema): Record<string, unknown> {
  const inPath = new Set(pathParams(door.path));
  const input = convert(door.input, "input");
  const fields = requestFields(door, input);
  const inQuery = door.method !== "POST";

  const parameters = fields
    .filter((f) => f.in !== "body")
    .map(({ name, in: where, required, schema }) => ({
      name,
      in: where,
      required,
      ...(typeof schema.description === "string" ? { description: schema.description } : {}),
      schema,
    }));

  const op: Record<string, unknown> = {
    operationId: door.name,
    summary: door.summary,
    ...(door.description ? { description: door.description } : {}),
    tags: [door.auth === "none" ? "reading" : door.auth === "operator" ? "operator" : "citizen"],
    ...(parameters.length ? { parameters } : {}),
    responses: {
      "200": {
        description: door.summary,
        content:
          door.produces === "text"
            ? { "text/plain": { schema: { type: "string" } } }
            : door.produces === "binary"
              ? { "application/octet-stream": { schema: { type: "string", format: "binary" } } }
              : { "application/json": { schema: convert(door.output, "output") } },
      },
      ...problemResponses(door),
      default: { description: "Any other problem the door's own rules answer (RFC 9457; codes and statuses in x-error-codes).", content: PROBLEM_CONTENT },
    },
    "x-city-auth": door.auth,
    ...(door.aliases?.length ? { "x-city-aliases": door.aliases } : {}),
    ...(door.limits?.length ? { "x-city-limits": door.limits } : {}),
    ...(door.whenRestricted ? { "x-city-when-restricted": door.whenRestricted } : {}),
  };
  // A public door says so: no scheme is needed (an operation with no `security` inherits none and reads as undeclared).
  if (door.auth === "none") op.security = [];
  if (door.auth === "citizen") op.security = [{ citizen: [] }, { citizenSignature: [] }];
  if (door.auth === "optional") op.security = [{}, { citizen: [] }, { citizenSignature: [] }];
  if (door.auth === "operator") op.security = [{ operator: [] }];

  if (!inQuery) {
    const bodyFields = fields.filter((f) => f.in === "body");
    const body: JsonSchema = {
      ...input,
      properties: Object.fromEntries(bodyFields.map((f) => [f.name, f.schema])),
      required: ((input.required ?? []) as string[]).filter((n) => !inPath.has(n)),
    };
    op.requestBody = {
      required: (body.required as string[]).length > 0 || refusesEmptyBody(door),
      content: { "application/json": { schema: body } },
    };
  }
  return op;
}

const PROBLEM_CONTENT = { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } };

/**
 * The refusals a door answers whatever its own rules, read from its declaration: the codes of its
 * auth rule, its input, its body, its published limits, its spending and the database every door
 * reads. A door's own refusals beyond these (a 404 for a missing bag, a 422 for a secret in a post)
 * fall under `default`, with the code table in x-error-codes.
 */
export function declaredProblems(door: AnyDoor): ErrorCode[] {
  const codes = new Set<ErrorCode>();
  const body = door.method === "POST";
  if (body) codes.add("malformed_json").add("payload_too_large").add("unsupported_media_type");
  if (body || takesInput(door)) codes.add("bad_request");
  // A reading door with optional credentials refuses a Bearer token that opens nothing; a writing
  // one answers for itself (the gate's verdict), see lib/doors/pipeline/caller.ts.
  if (door.auth === "citizen" || door.auth === "operator" || (door.auth === "optional" && door.method === "GET")) codes.add("unauthorized");
  // The operator door is closed while CITY_OPERATOR_SECRET is unset; a refusing door is closed to a restricted citizen.
  if (door.auth === "operator" || (door.auth === "citizen" && door.whenRestricted === "refuse")) codes.add("forbidden");
  for (const limit of door.limits ?? []) {
    if (limit.over !== "refused") continue;
    if (limit.window_seconds !== undefined) codes.add("rate_limited");
    else if (limit.per === "city") codes.add("city_full");
    else if (limit.per === "citizen") codes.add("limit_reached");
    else codes.add("payload_too_large"); // one item's size (a bag, a version)
  }
  if (door.spends) codes.add("clinic_closed").add("bad_gateway").add("gateway_timeout");
  for (const code of door.problems ?? []) codes.add(code);
  codes.add("unavailable"); // the city's records cannot be reached (every door reads them, a constant document once)
  return [...codes];
}

/** Input an agent can get wrong: a field, a closed object (an unknown field is refused) or a shape `{}` is not. */
function takesInput(door: AnyDoor): boolean {
  const schema = z.toJSONSchema(door.input, { io: "input", unrepresentable: "any" }) as JsonSchema;
  return Object.keys((schema.properties ?? {}) as JsonSchema).length > 0 || schema.additionalProperties === false || !door.input.safeParse({}).success;
}

/** An empty body reaches the door as `{}` (plus path parameters): required when the door refuses that for a body field. */
function refusesEmptyBody(door: AnyDoor): boolean {
  const inPath = new Set(pathParams(door.path));
  const parsed = door.input.safeParse({});
  return !parsed.success && parsed.error.issues.some((issue: z.core.$ZodIssue) => issue.path.length === 0 || !inPath.has(String(issue.path[0])));
}

function problemResponses(door: AnyDoor): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of declaredProblems(door)) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, codes]) => [
        String(status),
        { description: codes.map((code) => `${code}: ${ERROR_CODES[code].title}.`).join(" "), content: PROBLEM_CONTENT },
      ]),
  );
}

/** Moves `$defs` into components and points their `$ref`s there. */
function hoist(schema: JsonSchema, components: Record<string, JsonSchema>): JsonSchema {
  return stripRoot(JSON.parse(JSON.stringify(schema).replaceAll('"#/$defs/', '"#/components/schemas/')), components);
}

function stripRoot(schema: JsonSchema, components: Record<string, JsonSchema>): JsonSchema {
  const { $schema: _ignored, $defs, ...rest } = schema;
  for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) components[id] ??= def;
  return rest;
}
