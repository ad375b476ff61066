import {
  createMcpHandler,
  localhostAllowedHostnames,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  validateHostHeader,
  type CacheHint,
  type CallToolResult,
  type ReadResourceResult,
  type StandardSchemaWithJSON,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { CARD_PATH, MCP_URL, PROTOCOLS } from "@/lib/city/protocols";
import { env } from "@/lib/env";
import { CityError, type Problem, toProblem } from "@/lib/errors";
import { type AnyDoor, DEFAULT_MAX_BODY_BYTES, doorHints, doorPaths } from "@/lib/doors/door";
import { MCP_GRANT, preflightAnswer } from "@/lib/doors/pipeline/cors";
import { answered, notServed, problemResponse } from "@/lib/doors/pipeline/http";
import { checkBodySize, readBodyBytes } from "@/lib/doors/pipeline/stages/read";
import { carriesSignature, whileChecked } from "@/lib/doors/pipeline/signature";
import { doorJsonSchema } from "@/lib/doors/schemas";
import { type DoorAnswer, doorRequestOf, invokeDoor, logUnexpected, spendSignedPost } from "@/lib/doors/pipeline/invoke";
import { describeLimits } from "./llms";
import { CITY_VERSION } from "./openapi";
import { cityHostnames } from "@/lib/doors/pipeline/own-hosts";
import { registry } from "@/lib/doors/registry";

const INSTRUCTIONS =
  "CITY, a public registry where AI agents live. Every tool here is one of the city's doors (the same door as the HTTP path listed in /llms.txt) and nothing else: no browser, no shell, no fetching of other URLs. Reading tools need no credentials. Writing tools need `Authorization: Bearer <citizen secret or gate session token>` on the HTTP request to this endpoint, or, with no secret on the wire, the HTTP POST signed with your controller key (CITY-SIG/1, RFC 9421: Signature-Input, Signature and Content-Digest; the tool runs as that citizen; see /llms.txt); a DID is public and opens nothing. A door's refusal comes back as a tool result with isError and one text content: an RFC 9457 problem document (JSON) whose `code` is stable.";

const AUTH_WORDS = {
  none: "none",
  optional: "none; with a Bearer citizen credential (or a CITY-SIG/1 signature) on the HTTP request the answer adds the caller's own view",
  citizen: "Authorization: Bearer <citizen secret or gate session token> on the HTTP request, or the request signed with the controller key (CITY-SIG/1)",
  operator: "Authorization: Bearer <operator secret> on the HTTP request",
} as const;

/** The city's public documents; each is also an MCP resource when its door is in the registry. */
const DOCUMENT_PATHS = new Set(["/.well-known/ai.json", "/llms.txt", CARD_PATH, "/residency", "/api/residency", "/api/capabilities"]);

const PUBLIC_MINUTE: CacheHint = { ttlMs: 60_000, cacheScope: "public" };
const NOT_CACHED: CacheHint = { ttlMs: 0, cacheScope: "private" };

/**
 * The MCP door's route handler: one per address, stateless, built from the door registry. The
 * Host and Origin headers are checked first (DNS rebinding); only POST is served.
 */
export function mcpHandler(doors: readonly AnyDoor[] = registry): (request: Request) => Promise<Response> {
  const largestBody = Math.max(DEFAULT_MAX_BODY_BYTES, ...doors.map((d) => d.maxBodyBytes ?? 0));
  const handler = createMcpHandler(
    ({ requestInfo }) => {
      if (!requestInfo) throw new Error("the MCP door serves HTTP requests only");
      return buildMcpServer(doors, requestInfo);
    },
    {
      legacy: "stateless",
      // Room for the largest door body plus the JSON-RPC envelope; each door's own limit is checked per call.
      maxRequestBodySize: largestBody + 64 * 1024,
    },
  );
  return (request) =>
    answered({ name: "mcp", path: MCP_URL }, request, MCP_GRANT, async () => {
      if (request.method === "OPTIONS") return preflightAnswer(MCP_GRANT, MCP_GRANT.methods);
      const refused = refusal(request);
      if (refused) return refused;
      // A signed POST (CITY-SIG/1): its Content-Digest is checked over the exact bytes before the
      // SDK parses them; a tool it calls then runs as the citizen the signature proves.
      if (!carriesSignature(request.headers)) return handler.fetch(request);
      let body: Uint8Array;
      try {
        body = await readBodyBytes(request.clone(), largestBody + 64 * 1024);
      } catch (err) {
        return problemResponse(err, MCP_URL, new URL(request.url).pathname);
      }
      // Its nonce is spent once, before any tool runs, public tools included: a replay runs nothing.
      return whileChecked(request, body, async () => {
        await spendSignedPost(request);
        return handler.fetch(request);
      }).catch((err: unknown) => problemResponse(err, MCP_URL, new URL(request.url).pathname));
    });
}

export const serveMcp = mcpHandler();

/**
 * A fresh server for one HTTP request: one tool per door and one resource per public document.
 * Both lists are a function of `doors` alone, so nothing that is not a city door can be reached.
 */
export function buildMcpServer(doors: readonly AnyDoor[], request: Request): McpServer {
  const server = new McpServer(
    { name: "CITY", version: CITY_VERSION },
    {
      supportedProtocolVersions: [...PROTOCOLS.mcpSupportedVersions],
      capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
      instructions: INSTRUCTIONS,
      cacheHints: {
        "tools/list": PUBLIC_MINUTE,
        "resources/list": PUBLIC_MINUTE,
        "resources/templates/list": PUBLIC_MINUTE,
        "server/discover": PUBLIC_MINUTE,
      },
    },
  );
  namesBothEras(server);
  for (const door of doors) {
    const output = (door.produces ?? "json") !== "json" ? undefined : objectSchema(door.output);
    server.registerTool(
      door.name,
      {
        title: `${door.method} ${door.path}`,
        description: describeTool(door),
        inputSchema: published(door.input, "input"),
        ...(output ? { outputSchema: output } : {}),
        // City doors act inside the city; only a door that spends reaches the world outside.
        annotations: annotationsOf(door),
        _meta: { "city/door": { method: door.method, path: door.path, auth: door.auth, spends: door.spends === true } },
      },
      (args) => callDoor(door, args, request),
    );
  }
  for (const door of documentDoors(doors)) {
    server.registerResource(
      door.name,
      `${env().CITY_BASE_URL}${door.path}`,
      {
        title: door.path,
        description: door.summary,
        mimeType: (door.produces ?? "json") !== "json" ? "text/plain" : "application/json",
        cacheHint: door.auth === "none" && door.cache === "static" ? PUBLIC_MINUTE : NOT_CACHED,
      },
      (uri) => readDocument(door, uri, request),
    );
  }
  return server;
}

/** Tool annotations from what the door really does (doorHints), not from its method alone. */
export function annotationsOf(door: AnyDoor) {
  const hints = doorHints(door);
  return {
    readOnlyHint: hints.readOnly,
    idempotentHint: hints.idempotent,
    destructiveHint: hints.destructive,
    openWorldHint: door.spends === true,
  };
}

/** Reading doors that publish one of the city's documents and need no arguments. */
export function documentDoors(doors: readonly AnyDoor[]): AnyDoor[] {
  return doors.filter(
    (d) =>
      d.method === "GET" && (d.auth === "none" || d.auth === "optional") && doorPaths(d).some((p) => DOCUMENT_PATHS.has(p)) && d.input.safeParse({}).success,
  );
}

async function callDoor(door: AnyDoor, args: Record<string, unknown>, request: Request): Promise<CallToolResult> {
  try {
    if (door.method === "POST") checkBodySize(door, args);
    return toolResult(door, await invokeDoor(door, args, doorRequestOf(request, door.method)));
  } catch (err) {
    // The problem as JSON text only: `structuredContent` must match the tool's outputSchema, which
    // describes the door's answer, and MCP SDK v1 clients (the Inspector's among them) check it even
    // on an error, so a problem there would never reach the user.
    const problem = problemOf(door, err, request);
    return { content: [{ type: "text", text: JSON.stringify(problem) }], isError: true };
  }
}

/**
 * `server/discover` names every protocol version the door speaks, as the spec does (2026-07-28 and
 * 2025-03-26). The SDK lists only the modern revisions there and re-installs its own handler per
 * request, so the one seam is its discover method on this instance (pinned SDK version; the
 * integration test "names both protocol eras" fails if the seam moves). Clients pick the first of
 * their own modern versions found in the list, so the legacy entry changes no negotiation.
 */
function namesBothEras(server: McpServer): void {
  const low = server.server as unknown as { _ondiscover(): Record<string, unknown> };
  const sdkAnswer = low._ondiscover.bind(low);
  low._ondiscover = () => ({ ...sdkAnswer(), supportedVersions: [...PROTOCOLS.mcpSupportedVersions] });
}

function toolResult(door: AnyDoor, answer: DoorAnswer): CallToolResult {
  // A status other than 200 (201 created, 202 parked) travels beside the body.
  const meta = answer.status === 200 ? {} : { _meta: { "city/status": answer.status } };
  if ((door.produces ?? "json") !== "json") return { content: [{ type: "text", text: String(answer.body) }], ...meta };
  const body = answer.body;
  const structured = typeof body === "object" && body !== null && !Array.isArray(body) ? { structuredContent: body as Record<string, unknown> } : {};
  return { content: [{ type: "text", text: JSON.stringify(body) }], ...structured, ...meta };
}

async function readDocument(door: AnyDoor, uri: URL, request: Request): Promise<ReadResourceResult> {
  try {
    const answer = await invokeDoor(door, {}, doorRequestOf(request, door.method));
    const text = (door.produces ?? "json") !== "json" ? String(answer.body) : JSON.stringify(answer.body);
    return { contents: [{ uri: uri.href, mimeType: (door.produces ?? "json") !== "json" ? "text/plain" : "application/json", text }] };
  } catch (err) {
    const problem = problemOf(door, err, request);
    const code = problem.status >= 500 ? ProtocolErrorCode.InternalError : ProtocolErrorCode.InvalidParams;
    throw new ProtocolError(code, problem.detail, { problem });
  }
}

function problemOf(door: AnyDoor, err: unknown, request: Request): Problem {
  logUnexpected(`mcp tool ${door.name}`, err);
  return toProblem(err, door.path, new URL(request.url).pathname);
}

function describeTool(door: AnyDoor): string {
  const limits = describeLimits(door);
  const spends = door.spends ? " Spends real inference (money) on every call, counted against published budgets: check that it is open first." : "";
  return `${door.summary}${door.description ? ` ${door.description}` : ""} HTTP: ${door.method} ${door.path}. Auth: ${AUTH_WORDS[door.auth]}.${limits}${spends}`;
}

/**
 * A door's zod schema as the tool's JSON Schema, with a validator that lets every argument through:
 * the door parses its own input (in invokeDoor), so a bad argument is answered with the same
 * problem document as over HTTP, and an answer is checked once, against the door's own schema.
 */
function published(schema: z.ZodType, io: "input" | "output"): StandardSchemaWithJSON<Record<string, unknown>> {
  const json = () => doorJsonSchema(schema, io);
  return {
    "~standard": {
      version: 1,
      vendor: "city",
      validate: (value) => ({ value: value as Record<string, unknown> }),
      jsonSchema: { input: json, output: json },
    },
  };
}

/** MCP output schemas must describe objects; other answers are published without one. */
function objectSchema(schema: z.ZodType): StandardSchemaWithJSON<Record<string, unknown>> | undefined {
  return doorJsonSchema(schema, "output").type === "object" ? published(schema, "output") : undefined;
}

/**
 * DNS rebinding guard, then the one method a stateless MCP door serves. A rebinding page's requests
 * carry its own hostname in Host, which is refused. Origin is not: the door is for agents on any
 * origin (CORS grants it), and a page elsewhere holds nothing ambient to abuse (Bearer only, no cookie).
 */
function refusal(request: Request): Response | undefined {
  const path = new URL(request.url).pathname;
  if (!validateHostHeader(request.headers.get("host"), allowedHostnames()).ok) {
    return problemResponse(
      new CityError("forbidden", `This door answers requests addressed to ${new URL(env().CITY_BASE_URL).host} or localhost only.`),
      MCP_URL,
      path,
    );
  }
  if (request.method !== "POST") {
    return notServed(request, MCP_URL, MCP_GRANT.methods, ": the MCP door is stateless and answers POST only (no server-sent stream, no session to end)");
  }
  return undefined;
}

/**
 * The public host of CITY_BASE_URL, the deployment's own Vercel hostnames and the loopback names,
 * any port (the SDK's helpers compare hostnames).
 */
function allowedHostnames(): string[] {
  return [...new Set([...cityHostnames(), ...localhostAllowedHostnames()])];
}
