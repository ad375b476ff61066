import { AgentCard as AgentCardCodec, type Message, Role, type SendMessageRequest, Task, TaskState, taskStateToJSON } from "@a2a-js/sdk";
import {
  A2A_ERROR_CODE,
  A2AError,
  ContentTypeNotSupportedError,
  JsonRpcRequestMalformedError,
  RequestMalformedError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
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
import { getDb } from "@/lib/city/database";
import { A2A_TASK_LEAST_BYTES, A2A_TASK_MAX_BYTES, keepTask, listKeptTasks, readTask, type TaskCursor, taskOwnerHash } from "@/lib/city/a2a";
import { newcomerSql, refusalIfFull, STORE_ROW_BYTES, citizenShare } from "@/lib/city/bounds";
import { bearerToken } from "@/lib/city/keys";
import { env } from "@/lib/env";
import { CityError, type Problem, toProblem } from "@/lib/errors";
import { A2A_PATH, A2A_VERSIONS, buildAgentCard, describeSkillsInText, UNSIGNED_SKILL } from "./a2a-card";
import { citizenOpenedBy } from "@/lib/doors/pipeline/caller";
import { type AnyDoor, DEFAULT_MAX_BODY_BYTES, type DoorRequest } from "@/lib/doors/door";
import { describeA2a } from "./a2a";
import { A2A_GRANT, preflightAnswer } from "@/lib/doors/pipeline/cors";
import { answered, notServed, problemResponse, routes } from "@/lib/doors/pipeline/http";
import { checkBodySize, readBodyBytes } from "@/lib/doors/pipeline/stages/read";
import { checkSignedBody, signedCaller } from "@/lib/doors/pipeline/signature";
import { type DoorAnswer, doorRequestOf, invokeDoor, logUnexpected, spendSignedPost } from "@/lib/doors/pipeline/invoke";
import { CITY_VERSION } from "./openapi";
import { registry } from "@/lib/doors/registry";

const DOOR_REQUEST = "city/door-request";
const DOOR_ANSWER = "city/door-answer";
const PROBLEM = "city/problem";
const HELP = "city/help";
const PROOF_REQUIRED =
  "The agent-to-agent bridge needs proof for this skill: Authorization: Bearer <citizen secret or gate session token>, or the POST signed with your controller key (CITY-SIG/1, RFC 9421). Only seek-hospital, sent with no Authorization header, is open (unsigned distress).";

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
  /** ListTasks: the caller's own kept tasks, newest first; a caller without proof has none. */
  async list(params, context) {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const owner = ownerOf(context);
    if (!owner) return { tasks: [], nextPageToken: "", pageSize, totalSize: 0 };
    const filter = {
      contextId: params.contextId || undefined,
      state: params.status ? taskStateToJSON(params.status) : undefined,
      statusAfter: params.statusTimestampAfter ? new Date(params.statusTimestampAfter).toISOString() : undefined,
    };
    const after = params.pageToken ? cursorOf(params.pageToken) : undefined;
    const page = await listKeptTasks(await getDb(), owner, { limit: pageSize, after, filter }, new Date());
    const tasks = page.tasks.map((kept) => {
      const task = Task.fromJSON(kept);
      return params.includeArtifacts ? task : { ...task, artifacts: [] };
    });
    return { tasks, nextPageToken: page.next ? pageTokenOf(page.next) : "", pageSize, totalSize: page.total };
  },
};

/** The SDK's own default page size for ListTasks (it refuses a pageSize outside 1..100). */
const DEFAULT_PAGE_SIZE = 50;

/** A page token is opaque to the caller: the base64url of the last listed task's keep time and id. */
function pageTokenOf(cursor: TaskCursor): string {
  return Buffer.from(`${cursor.createdAt.toISOString()}|${cursor.id}`).toString("base64url");
}

function cursorOf(token: string): TaskCursor {
  const [at, ...id] = Buffer.from(token, "base64url").toString("utf8").split("|");
  const createdAt = new Date(at ?? "");
  if (id.length === 0 || !id.join("|") || Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== at) {
    throw new RequestMalformedError("pageToken is not one this bridge gave: send the nextPageToken of the previous page, or none for the first.");
  }
  return { createdAt, id: id.join("|") };
}

/** The door has already run (in sendMessage); the executor turns its answer into one completed task. */
const doorExecutor: AgentExecutor = {
  async execute(requestContext, eventBus) {
    const help = requestContext.context.state.get(HELP) as string | undefined;
    if (help !== undefined) {
      eventBus.publish(helpMessage(requestContext.contextId, help));
      eventBus.finished();
      return;
    }
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
 * Any text that is not a skill call is answered with a Message (A2A: a reply that is not a task),
 * listing the skills: no task is made, so there is no task id that GetTask would not know.
 */
function helpMessage(contextId: string, text: string) {
  return AgentEvent.message({
    messageId: crypto.randomUUID(),
    contextId,
    taskId: "",
    role: Role.ROLE_AGENT,
    parts: [{ content: { $case: "text", value: text }, mediaType: "text/plain", filename: "", metadata: {} }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  });
}

/**
 * A caller with proof has its task kept after the door runs: when the kept tasks' city-wide store
 * (or the caller's share of its hour) has no room even for the least a kept task takes
 * (A2A_TASK_LEAST_BYTES, not the largest kept size: a flood's look-aheads never hold 32 KB each),
 * the call is refused before the door runs. The charge at keeping decides with the task's actual
 * size; a task it cannot keep then is answered once, its problem in `data`.
 */
async function refuseWhenTasksFull(context: ServerCallContext): Promise<void> {
  if (!ownerOf(context)) return;
  const did = context.user instanceof CityCaller ? context.user.did : null;
  const now = new Date();
  const owner = ownerOf(context)!;
  const subject = did ? citizenShare(did) : { id: `owner:${owner}`, did: null };
  const full = await refusalIfFull(await getDb(), {
    store: "a2a_tasks",
    bytes: A2A_TASK_LEAST_BYTES + STORE_ROW_BYTES,
    newcomer: newcomerSql(did, now),
    now,
    subject,
  });
  if (full) throw full;
}

/** The SDK's request handler, with each skill call run through invokeDoor before its task is made. */
class CityRequestHandler extends DefaultRequestHandler {
  override async sendMessage(params: SendMessageRequest, context: ServerCallContext) {
    if (params.message?.taskId) await refuseContinuation(params.message.taskId, context);
    const call = messageCall(params.message);
    if ("help" in call) {
      context.state.set(HELP, helpText());
      return super.sendMessage(params, context);
    }
    const { door, fields } = call;
    const request = context.state.get(DOOR_REQUEST) as DoorRequest;
    try {
      if (!isOpenWithoutProof(door, request) && door.auth !== "operator" && !ownerOf(context)) {
        // A refused signature says why (its kept verification rejects again with its own problem).
        await signedCaller(await getDb(), request, new Date());
        throw new CityError("unauthorized", PROOF_REQUIRED);
      }
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
  throw new CityError(
    "bad_request",
    `Unknown field${unknown.length > 1 ? "s" : ""} for skill ${door.name}: ${named.join(", ")}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ""}. Send only the door's own fields (its input schema in /openapi.json).`,
  );
}

function isOpenWithoutProof(door: AnyDoor, request: DoorRequest): boolean {
  return door.name === UNSIGNED_SKILL && !request.headers.has("authorization");
}

/** A contextId is kept with the task, so it is bounded like every kept text. */
const MAX_CONTEXT_ID = 200;

/**
 * A message naming a task continues it; every city task is completed (terminal) when answered, so
 * a task the caller owns answers UnsupportedOperationError (-32004), and a task it does not own, or
 * that does not exist, TaskNotFoundError (-32001), as A2A 1.0 §3.4.2 says. Checked before any door runs.
 */
async function refuseContinuation(taskId: string, context: ServerCallContext): Promise<never> {
  const task = await databaseTaskStore.load(taskId, context);
  if (!task)
    throw new TaskNotFoundError(
      `Task not found: no task of yours has the id ${JSON.stringify(taskId.length > 80 ? `${taskId.slice(0, 80)}…` : taskId)}. Every skill call starts a new task: send the message without taskId.`,
    );
  throw new UnsupportedOperationError(
    `Task ${task.id} is completed, a terminal state, and cannot be continued: every skill call starts a new task, so send the message without taskId.`,
  );
}

/** Media types a part may declare: a data part JSON, a text part plain text or JSON; none means its kind's own. */
const DATA_TYPES = new Set(["", "application/json"]);
const TEXT_TYPES = new Set(["", "text/plain", "application/json"]);
const ONE_PART =
  'The message must carry exactly one part: a data part { "skill": "<skill id>", ...fields }, or a text part holding that JSON. The skills are listed in /.well-known/agent-card.json.';

/**
 * What a message asks. One data part `{ skill, ...fields }`, or one text part holding that JSON,
 * is a skill call; any other text asks what the bridge offers (answered with the list of skills).
 * A part that is neither JSON nor text (raw bytes, a URL, another media type) is
 * ContentTypeNotSupportedError (-32005, A2A 1.0 §3.1.1 and §5.4).
 */
function messageCall(message: Message | undefined): { door: AnyDoor; fields: Record<string, unknown> } | { help: true } {
  const invalid = (why: string) => new JsonRpcRequestMalformedError({ envelopeCode: A2A_ERROR_CODE.INVALID_PARAMS, message: why });
  if (!message) throw invalid("params.message is required.");
  if (!message.messageId) throw invalid("message.messageId is required.");
  if (message.contextId.length > MAX_CONTEXT_ID) throw invalid(`message.contextId is at most ${MAX_CONTEXT_ID} characters (it is kept with the task).`);
  for (const part of message.parts) {
    const kind = part.content?.$case;
    const mediaType = (part.mediaType.split(";")[0] ?? "").trim().toLowerCase();
    const accepted = kind === "data" ? DATA_TYPES.has(mediaType) : kind === "text" ? TEXT_TYPES.has(mediaType) : kind === undefined;
    if (!accepted) {
      const what =
        kind === "raw" || kind === "url"
          ? `a ${kind === "raw" ? "raw (file bytes)" : "url (file reference)"} part`
          : `a ${kind} part of media type ${JSON.stringify(mediaType.slice(0, 80))}`;
      throw new ContentTypeNotSupportedError(
        `The bridge takes JSON and text only, not ${what}: send one data part (application/json) { "skill": "<skill id>", ...fields }, or a text part holding that JSON.`,
      );
    }
  }
  const part = message.parts.length === 1 ? message.parts[0] : undefined;
  if (!part?.content) throw invalid(ONE_PART);
  let data: unknown = part.content.value;
  if (part.content.$case === "text") {
    data = skillCallIn(part.content.value);
    if (data === undefined) return { help: true };
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) throw invalid(ONE_PART);
  const { skill, ...fields } = data as Record<string, unknown>;
  const door = registry.find((d) => d.name === skill);
  if (!door) throw invalid(`Unknown skill ${JSON.stringify(skill)}: the data part's "skill" must be one of the skill ids in /.well-known/agent-card.json.`);
  return { door, fields };
}

/** A text that is a JSON object with a "skill" member is a skill call; any other text is not (undefined). */
function skillCallIn(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return value && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, "skill") ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

let help: string | undefined;

/** What the bridge answers to plain text: how to call a skill, and every skill's id and door. */
function helpText(): string {
  help ??= describeSkillsInText(registry, env().CITY_BASE_URL);
  return help;
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
    const bytes = await readBodyBytes(request, MAX_RPC_BYTES);
    // A signed POST (CITY-SIG/1): its Content-Digest is checked over the exact bytes before they are parsed.
    checkSignedBody(request, bytes);
    // Its nonce is spent once here, before any skill runs, public skills included: a replay keeps nothing.
    await spendSignedPost(request);
    body = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  } catch (err) {
    return problemResponse(err, A2A_PATH, path);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return rpcResponse({
      jsonrpc: "2.0",
      id: null,
      error: { code: A2A_ERROR_CODE.PARSE_ERROR, message: "The body is not JSON: send one JSON-RPC 2.0 request object." },
    });
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
  return new Response(JSON.stringify(envelope), {
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", Vary: "Authorization, A2A-Version" },
  });
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

/**
 * The hash of the DID a live Bearer citizen credential or a verified CITY-SIG/1 signature proves,
 * with the DID, or null (no proof, or none that opens). A signature's nonce is spent by the skill's
 * door, which verifies it again (from the same request's kept verification) in its own resolution.
 */
async function ownerHash(request: Request): Promise<{ hash: string; did: string } | null> {
  const signing = signedCaller(await getDb(), doorRequestOf(request, "POST"), new Date());
  if (signing) {
    const proven = await signing.catch(() => null);
    return proven ? { hash: taskOwnerHash(proven.key.did), did: proven.key.did } : null;
  }
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
