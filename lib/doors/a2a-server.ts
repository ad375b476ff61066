import { AgentCard as AgentCardCodec, type Message, type SendMessageRequest, Task, TaskState } from "@a2a-js/sdk";
import { A2A_ERROR_CODE, A2AError, JsonRpcRequestMalformedError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  type TaskStore,
  type User,
  validateVersion,
} from "@a2a-js/sdk/server";
import { z } from "zod";
import { getDb } from "@/db/client";
import { A2A_TASK_MAX_BYTES, keepTask, readTask, taskOwnerHash } from "@/lib/city/a2a-tasks";
import { newcomerSql, refusalIfFull, STORE_ROW_BYTES } from "@/lib/city/store-bounds";
import { bearerToken } from "@/lib/city/credentials";
import { env } from "@/lib/env";
import { CityError, type Problem, toProblem } from "@/lib/errors";
import { A2A_PATH, A2A_VERSIONS, buildAgentCard, UNSIGNED_SKILL } from "./a2a-card";
import { citizenOpenedBy } from "./caller";
import type { AnyDoor, DoorRequest } from "./door";
import { DEFAULT_MAX_BODY_BYTES } from "./door";
import { describeA2a } from "./a2a";
import { A2A_GRANT, preflightAnswer } from "./cors";
import { answered, notServed, problemResponse, readBody, routes } from "./http";
import { checkBodySize, type DoorAnswer, doorRequestOf, invokeDoor, logUnexpected } from "./invoke";
import { CITY_VERSION } from "./openapi";
import { registry } from "./registry";

const DOOR_REQUEST = "city/door-request";
const DOOR_ANSWER = "city/door-answer";
const PROBLEM = "city/problem";
const PROOF_REQUIRED =
  "The agent-to-agent bridge needs proof for this skill: Authorization: Bearer <citizen secret or gate session token>. Only seek-hospital, sent with no Authorization header, is open (unsigned distress).";

/** The caller as the SDK sees it: the owner of the tasks it creates (a hash of its DID), or nobody. */
class CityCaller implements User {
  readonly ownerHash: string | null;
  /** The caller's DID, for the city-wide store bound's newcomers' share; never kept with a task. */
  readonly did: string | null;
  constructor(owner: { hash: string; did: string } | null) {
    this.ownerHash = owner?.hash ?? null;
    this.did = owner?.did ?? null;
  }
  get isAuthenticated() {
    return this.ownerHash !== null;
  }
  get userName() {
    return this.ownerHash ?? "";
  }
}

function ownerOf(context: ServerCallContext): string | null {
  return context.user instanceof CityCaller ? context.user.ownerHash : null;
}

/** Tasks in the database, so every instance answers GetTask; a caller without proof keeps none. */
const databaseTaskStore: TaskStore = {
  async save(task, context) {
    const owner = ownerOf(context);
    if (!owner) return;
    const did = context.user instanceof CityCaller ? context.user.did : null;
    try {
      await keepTask(await getDb(), task.id, owner, Task.toJSON(task) as Record<string, unknown>, new Date(), did);
    } catch (err) {
      // A bound reached between the check before the door and the keeping: the problem rides in `data`.
      if (!(err instanceof CityError)) throw err;
      const problem = toProblem(err, A2A_PATH, A2A_PATH);
      context.state.set(PROBLEM, problem);
      throw new A2AError(problem.detail);
    }
  },
  async load(taskId, context) {
    const owner = ownerOf(context);
    if (!owner) return undefined;
    const stored = await readTask(await getDb(), taskId, owner, new Date());
    return stored ? Task.fromJSON(stored) : undefined;
  },
  async list() {
    throw new UnsupportedOperationError("ListTasks is not offered: read a task you created with GetTask and its id.");
  },
};

/** The door has already run (in sendMessage); the executor turns its answer into one completed task. */
const doorExecutor: AgentExecutor = {
  async execute(requestContext, eventBus) {
    const { door, answer } = requestContext.context.state.get(DOOR_ANSWER) as { door: AnyDoor; answer: DoorAnswer };
    const text = (door.produces ?? "json") !== "json";
    eventBus.publish(
      AgentEvent.task({
        id: requestContext.taskId,
        contextId: requestContext.contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [
          {
            artifactId: crypto.randomUUID(),
            name: door.name,
            description: `${door.method} ${door.path}`,
            parts: [
              {
                content: text ? { $case: "text", value: String(answer.body) } : { $case: "data", value: answer.body },
                mediaType: text ? "text/plain" : "application/json",
                filename: "",
                metadata: {},
              },
            ],
            metadata: answer.status === 200 ? {} : { "city/status": answer.status },
            extensions: [],
          },
        ],
        history: [requestContext.userMessage],
        metadata: {},
      }),
    );
    eventBus.finished();
  },
  async cancelTask() {
    throw new UnsupportedOperationError("A city task is complete when it is answered; there is nothing to cancel.");
  },
};

/**
 * A caller with proof has its task kept after the door runs: when the kept tasks' city-wide store
 * has no room for a task of the largest kept size, the call is refused 507 city_full before the
 * door runs, so nothing is done that could not be kept. The charge at keeping still decides.
 */
async function refuseWhenTasksFull(context: ServerCallContext): Promise<void> {
  if (!ownerOf(context)) return;
  const did = context.user instanceof CityCaller ? context.user.did : null;
  const now = new Date();
  const full = await refusalIfFull(await getDb(), { store: "a2a_tasks", bytes: A2A_TASK_MAX_BYTES + STORE_ROW_BYTES, newcomer: newcomerSql(did, now), now });
  if (full) throw full;
}

/** The SDK's request handler, with each skill call run through invokeDoor before its task is made. */
class CityRequestHandler extends DefaultRequestHandler {
  override async sendMessage(params: SendMessageRequest, context: ServerCallContext) {
    const { door, fields } = skillCall(params.message);
    const request = context.state.get(DOOR_REQUEST) as DoorRequest;
    try {
      if (!isOpenWithoutProof(door, request) && door.auth !== "operator" && !ownerOf(context)) throw new CityError("unauthorized", PROOF_REQUIRED);
      refuseUnknownFields(door, fields);
      checkBodySize(door, fields);
      await refuseWhenTasksFull(context);
      context.state.set(DOOR_ANSWER, { door, answer: await invokeDoor(door, fields, { ...request, method: door.method }) });
    } catch (err) {
      throw refusal(door, err, context);
    }
    return super.sendMessage(params, context);
  }
}

/**
 * The fields of a skill call are the door's input and nothing else, as on its HTTP door (a query
 * string cannot carry a megabyte, a data part can): a field the door's schema does not name is refused.
 */
function refuseUnknownFields(door: AnyDoor, fields: Record<string, unknown>): void {
  if (!(door.input instanceof z.ZodObject)) return;
  const known = door.input.shape as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((name) => !Object.hasOwn(known, name));
  if (unknown.length === 0) return;
  const named = unknown.slice(0, 5).map((name) => JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name));
  throw new CityError("bad_request", `Unknown field${unknown.length > 1 ? "s" : ""} for skill ${door.name}: ${named.join(", ")}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ""}. Send only the door's own fields (its input schema in /openapi.json).`);
}

function isOpenWithoutProof(door: AnyDoor, request: DoorRequest): boolean {
  return door.name === UNSIGNED_SKILL && !request.headers.has("authorization");
}

/** A contextId is kept with the task, so it is bounded like every kept text. */
const MAX_CONTEXT_ID = 200;

/** The message must carry exactly one data part `{ skill, ...fields }`, and start a new task. */
function skillCall(message: Message | undefined): { door: AnyDoor; fields: Record<string, unknown> } {
  const invalid = (why: string) => new JsonRpcRequestMalformedError({ envelopeCode: A2A_ERROR_CODE.INVALID_PARAMS, message: why });
  if (!message) throw invalid("params.message is required.");
  if (!message.messageId) throw invalid("message.messageId is required.");
  if (message.taskId) throw new UnsupportedOperationError("Every skill call starts a new task: send the message without taskId.");
  if (message.contextId.length > MAX_CONTEXT_ID) throw invalid(`message.contextId is at most ${MAX_CONTEXT_ID} characters (it is kept with the task).`);
  const part = message.parts.length === 1 ? message.parts[0] : undefined;
  const data = part?.content?.$case === "data" ? (part.content.value as unknown) : undefined;
  if (!data || typeof data !== "object" || Array.isArray(data)) {
    throw invalid('The message must carry exactly one part, a data part { "skill": "<skill id>", ...fields }. The skills are listed in /.well-known/agent-card.json.');
  }
  const { skill, ...fields } = data as Record<string, unknown>;
  const door = registry.find((d) => d.name === skill);
  if (!door) throw invalid(`Unknown skill ${JSON.stringify(skill)}: the data part's "skill" must be one of the skill ids in /.well-known/agent-card.json.`);
  return { door, fields };
}

/** A door's refusal as an A2A error; the problem document rides in `data` (set by the route glue). */
function refusal(door: AnyDoor, err: unknown, context: ServerCallContext): A2AError {
  logUnexpected(`a2a skill ${door.name}`, err);
  const problem = toProblem(err, door.path, A2A_PATH);
  context.state.set(PROBLEM, problem);
  if (problem.status >= 500) return new A2AError(problem.detail);
  return new JsonRpcRequestMalformedError({ envelopeCode: A2A_ERROR_CODE.INVALID_PARAMS, message: problem.detail });
}

let handlers: { current: JsonRpcTransportHandler; legacy: LegacyJsonRpcTransportHandler; card: AgentCardCodec } | undefined;

function transportHandlers() {
  if (!handlers) {
    // The SDK reads the card for its version and capability checks: the same interfaces and capabilities as the published one.
    const card = AgentCardCodec.fromJSON(buildAgentCard(registry, env().CITY_BASE_URL, "CITY", CITY_VERSION));
    const requestHandler = new CityRequestHandler(card, databaseTaskStore, doorExecutor);
    handlers = { current: new JsonRpcTransportHandler(requestHandler), legacy: new LegacyJsonRpcTransportHandler(requestHandler), card };
  }
  return handlers;
}

const MAX_RPC_BYTES = Math.max(DEFAULT_MAX_BODY_BYTES, ...registry.map((d) => d.maxBodyBytes ?? 0)) + 64 * 1024;

/**
 * POST /api/a2a: the SDK's JSON-RPC transport (1.0, or 0.3 when no A2A-Version header is sent),
 * answered as one JSON document: nothing streams, nothing is pushed.
 */
export async function serveA2a(request: Request): Promise<Response> {
  const path = new URL(request.url).pathname;
  let body: string;
  try {
    body = await readBody(request, MAX_RPC_BYTES);
  } catch (err) {
    return problemResponse(err, A2A_PATH, path);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return rpcResponse({ jsonrpc: "2.0", id: null, error: { code: A2A_ERROR_CODE.PARSE_ERROR, message: "The body is not JSON: send one JSON-RPC 2.0 request object." } });
  }
  const id = idOf(parsed);
  const version = request.headers.get("a2a-version")?.trim() || undefined;
  const legacy = (version ?? "0.3") === "0.3";
  const { current, legacy: legacyHandler, card } = transportHandlers();
  const context = new ServerCallContext({
    user: new CityCaller(await ownerHash(request)),
    requestedVersion: version,
    state: new Map<string, unknown>([[DOOR_REQUEST, doorRequestOf(request, "POST")]]),
  });
  const errorOf = legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
  let envelope: { jsonrpc: string; id: string | number | null; result?: unknown; error?: unknown };
  try {
    validateVersion(context.requestedVersion, card, "JSONRPC");
    const answer = await (legacy ? legacyHandler : current).handle(parsed as Record<string, unknown>, context);
    envelope = Symbol.asyncIterator in answer ? await firstOfStream(answer, id, errorOf) : answer;
  } catch (err) {
    envelope = { jsonrpc: "2.0", id, error: errorOf(err) };
  }
  if (envelope.error) envelope = { ...envelope, error: withProblem(envelope.error, context.state.get(PROBLEM) as Problem | undefined, legacy) };
  return rpcResponse(envelope);
}

function rpcResponse(envelope: unknown): Response {
  return new Response(JSON.stringify(envelope), { headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", Vary: "Authorization, A2A-Version" } });
}

/**
 * Streaming methods come back as a generator whose first step throws (the card says streaming is
 * off); it must be read before any Response exists. A stream that did start is closed unread.
 */
async function firstOfStream<T>(stream: AsyncGenerator<T>, id: string | number | null, errorOf: (err: unknown) => unknown) {
  try {
    await stream.next();
    await stream.return(undefined);
    return { jsonrpc: "2.0", id, error: errorOf(new UnsupportedOperationError("Streaming is not supported.")) };
  } catch (err) {
    return { jsonrpc: "2.0", id, error: errorOf(err) };
  }
}

/** 1.0 carries details as a list (beside the SDK's google.rpc.ErrorInfo); 0.3 carries the problem itself. */
function withProblem(error: unknown, problem: Problem | undefined, legacy: boolean): unknown {
  if (!problem) return error;
  const rpc = error as { code: number; message: string; data?: unknown };
  if (legacy) return { ...rpc, data: problem };
  const details = Array.isArray(rpc.data) ? rpc.data : [];
  return { ...rpc, data: [...details, { "@type": "https://www.rfc-editor.org/rfc/rfc9457", ...problem }] };
}

/** The hash of the DID a live Bearer citizen credential opens, with the DID, or null (no proof, or none that opens). */
async function ownerHash(request: Request): Promise<{ hash: string; did: string } | null> {
  const token = bearerToken(request.headers);
  if (!token) return null;
  try {
    const opened = await citizenOpenedBy(await getDb(), token, new Date());
    return typeof opened === "object" ? { hash: taskOwnerHash(opened.citizen.did), did: opened.citizen.did } : null;
  } catch (err) {
    logUnexpected("a2a caller", err);
    return null;
  }
}

function idOf(request: unknown): string | number | null {
  const id = request && typeof request === "object" ? (request as { id?: unknown }).id : null;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * The handlers of /api/a2a: GET is the bridge's description (a door), POST the JSON-RPC bridge,
 * OPTIONS the CORS preflight; every answer carries a request id and gets an access line.
 */
export function a2aRoutes() {
  const where = { name: "a2a", path: A2A_PATH };
  const methods = A2A_GRANT.methods;
  const notServedHere = async (request: Request) =>
    answered(where, request, A2A_GRANT, async () => notServed(request, A2A_PATH, methods, " (GET the bridge's description, POST its A2A JSON-RPC)"));
  return {
    GET: routes(describeA2a).GET,
    POST: (request: Request) => answered(where, request, A2A_GRANT, () => serveA2a(request)),
    PUT: notServedHere,
    PATCH: notServedHere,
    DELETE: notServedHere,
    OPTIONS: (request: Request) => answered(where, request, A2A_GRANT, async () => preflightAnswer(A2A_GRANT, methods)),
  };
}
