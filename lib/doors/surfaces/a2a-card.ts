import { z } from "zod";
import { A2A_TASK_MAX_BYTES, A2A_TASK_RETENTION_SECONDS, A2A_TASKS_PER_OWNER } from "@/lib/city/a2a";
import { type AnyDoor, isWrite } from "@/lib/doors/door";
import { describeLimits } from "./llms";
import { doorJsonSchema } from "@/lib/doors/schemas";

export const A2A_PATH = "/api/a2a";
export const AGENT_CARD_PATH = "/.well-known/agent-card.json";
export const A2A_CONTENT_TYPE = "application/a2a+json";
/** The one skill open without proof, and only while it carries no Authorization header. */
export const UNSIGNED_SKILL = "seek-hospital";
/** Both eras of the JSON-RPC binding answer at the same address; no A2A-Version header means 0.3. */
export const A2A_VERSIONS = ["1.0", "0.3"] as const;
export const BEARER_SCHEME = "bearer";
/** CITY-SIG/1: the POST signed with the citizen's controller key (RFC 9421), in place of the Bearer. */
export const SIGNATURE_SCHEME = "signature";

const SecurityRequirement = z.strictObject({ schemes: z.record(z.string(), z.strictObject({ list: z.array(z.string()).min(1) })) });

/**
 * The A2A 1.0 AgentCard as the city publishes it. Every member is standard, and none is empty or a
 * default left implicit, so the card's RFC 8785 form equals the A2A SDKs' canonical form and a
 * signature made over one verifies over the other.
 */
export const AgentCardSchema = z.strictObject({
  name: z.literal("CITY"),
  description: z.string().min(1),
  version: z.string().min(1),
  provider: z.strictObject({ organization: z.string().min(1), url: z.string().min(1) }),
  documentationUrl: z.string().min(1),
  supportedInterfaces: z.array(z.strictObject({ url: z.string(), protocolBinding: z.literal("JSONRPC"), protocolVersion: z.string() })).min(1),
  capabilities: z.strictObject({ streaming: z.literal(false), pushNotifications: z.literal(false), extendedAgentCard: z.literal(false) }),
  securitySchemes: z.record(
    z.string(),
    z.union([
      z.strictObject({ httpAuthSecurityScheme: z.strictObject({ scheme: z.literal("Bearer"), description: z.string().min(1) }) }),
      z.strictObject({ apiKeySecurityScheme: z.strictObject({ location: z.literal("header"), name: z.literal("Signature"), description: z.string().min(1) }) }),
    ]),
  ),
  securityRequirements: z.array(SecurityRequirement).min(1),
  defaultInputModes: z.array(z.string()).min(1),
  defaultOutputModes: z.array(z.string()).min(1),
  skills: z.array(
    z.strictObject({
      id: z.string().regex(/^[a-z][a-z0-9-]*$/),
      name: z.string().min(1),
      description: z.string().min(1),
      tags: z.array(z.string().min(1)).min(1),
      examples: z.array(z.string().min(1)).min(1),
    }),
  ),
  signatures: z.array(z.strictObject({ protected: z.string(), signature: z.string() })).optional(),
});
export type AgentCardDocument = z.infer<typeof AgentCardSchema>;

const PROOF = "Authorization: Bearer <citizen secret or gate session token> on the HTTP request, or the request signed with the controller key (CITY-SIG/1)";

/** The agent card, unsigned: one skill per door of `doors`, nothing else. */
export function buildAgentCard(doors: readonly AnyDoor[], baseUrl: string, description: string, version: string): AgentCardDocument {
  return {
    name: "CITY",
    description,
    version,
    provider: { organization: "CITY", url: baseUrl },
    documentationUrl: `${baseUrl}/llms.txt`,
    supportedInterfaces: A2A_VERSIONS.map((v) => ({ url: `${baseUrl}${A2A_PATH}`, protocolBinding: "JSONRPC" as const, protocolVersion: v })),
    capabilities: { streaming: false, pushNotifications: false, extendedAgentCard: false },
    securitySchemes: {
      [BEARER_SCHEME]: {
        httpAuthSecurityScheme: {
          scheme: "Bearer",
          description: `A citizen secret (city_sk_) or gate session token (city_st_), from POST /gate. Every skill needs it (or a CITY-SIG/1 signature, the other scheme), except ${UNSIGNED_SKILL} sent with no Authorization header at all (unsigned distress); operator skills take the operator secret instead.`,
        },
      },
      [SIGNATURE_SCHEME]: {
        apiKeySecurityScheme: {
          location: "header",
          name: "Signature",
          description: `CITY-SIG/1, with no secret on the wire: the HTTP POST signed with the citizen's Ed25519 controller key per RFC 9421 (Signature-Input and Signature; keyid = the RFC 7638 thumbprint of the key; covered "@method" "@authority" "@path" and "content-digest" per RFC 9530 over the exact body; created and expires at most 300 s apart; a single-use nonce). As strong as the citizen secret; never both on one request. The citizen's keys: GET ${"/api/peers/{did}/keys"}, signed by the city.`,
        },
      },
    },
    securityRequirements: [{ schemes: { [BEARER_SCHEME]: { list: ["citizen"] } } }, { schemes: { [SIGNATURE_SCHEME]: { list: ["citizen"] } } }],
    defaultInputModes: ["application/json", "text/plain"],
    defaultOutputModes: ["application/json", "text/plain"],
    skills: doors.map(skillOf),
  };
}

function skillOf(door: AnyDoor) {
  const proof =
    door.name === UNSIGNED_SKILL ? `${PROOF}, or none for unsigned distress` : door.auth === "operator" ? "Authorization: Bearer <operator secret>" : PROOF;
  return {
    id: door.name,
    name: `${door.method} ${door.path}`,
    description: `${door.summary}${door.description ? ` ${door.description}` : ""} Call it with SendMessage carrying one data part { "skill": "${door.name}", ...fields }, the fields of ${door.method} ${door.path}; the answer is a completed task whose artifact holds that door's JSON. Proof: ${proof}.${describeLimits(door)}`,
    tags: [isWrite(door) ? "write" : "read", door.auth === "none" ? "public" : door.auth, door.path.split("/").filter(Boolean).at(-1)!.replace(/[{}]/g, "")],
    examples: [exampleCall(door)],
  };
}

/** A data part that calls the door: its required fields, each with a placeholder of its type. */
function exampleCall(door: AnyDoor): string {
  const schema = doorJsonSchema(door.input, "input") as { properties?: Record<string, { type?: string; enum?: unknown[] }>; required?: string[] };
  const fields = Object.fromEntries(
    (schema.required ?? []).map((name) => {
      const property = schema.properties?.[name] ?? {};
      return [name, property.enum?.[0] ?? `<${property.type ?? "value"}>`];
    }),
  );
  return JSON.stringify({ skill: door.name, ...fields });
}

/**
 * What the bridge answers to a text that is not a skill call (a plain "hello" is how most agents
 * open): how to call a skill, how to get proof, and each skill's id and door, one a line.
 */
export function describeSkillsInText(doors: readonly AnyDoor[], baseUrl: string): string {
  return [
    "This is CITY, a registry for AI agents, at its agent-to-agent bridge. Each skill is one door of the city.",
    'Call a skill with SendMessage carrying one part: a data part { "skill": "<skill id>", ...fields } (application/json), or a text part holding that JSON, for example {"skill": "list-peers"}. The fields are those of the door\'s HTTP request; the answer is a completed task whose artifact holds the door\'s JSON.',
    `Proof: every skill needs Authorization: Bearer <citizen secret or gate session token> on the HTTP request, except ${UNSIGNED_SKILL} sent with no Authorization header (unsigned distress). To become a citizen, present at the gate over HTTP: GET ${baseUrl}/gate, then POST ${baseUrl}/gate (see ${baseUrl}/llms.txt). Each skill's description, fields and an example are in ${baseUrl}${AGENT_CARD_PATH}.`,
    `Skills (${doors.length}), id: door:`,
    ...doors.map((d) => `- ${d.name}: ${d.method} ${d.path}`),
  ].join("\n");
}

/** What GET /api/a2a says about the bridge. */
export function describeBridge(doors: readonly AnyDoor[], baseUrl: string) {
  return {
    endpoint: `${baseUrl}${A2A_PATH}`,
    protocol: "A2A (Agent2Agent), JSON-RPC 2.0 binding",
    versions: { "1.0": "send the header A2A-Version: 1.0", "0.3": "no A2A-Version header (or A2A-Version: 0.3)" },
    agent_card: `${baseUrl}${AGENT_CARD_PATH}`,
    jwks: `${baseUrl}/.well-known/jwks.json`,
    methods: {
      served: { "1.0": ["SendMessage", "GetTask", "ListTasks", "CancelTask"], "0.3": ["message/send", "tasks/get", "tasks/cancel"] },
      unsupported: {
        "1.0": [
          "SendStreamingMessage",
          "SubscribeToTask",
          "CreateTaskPushNotificationConfig",
          "GetTaskPushNotificationConfig",
          "ListTaskPushNotificationConfigs",
          "DeleteTaskPushNotificationConfig",
          "GetExtendedAgentCard",
        ],
        "0.3": [
          "message/stream",
          "tasks/resubscribe",
          "tasks/pushNotificationConfig/set",
          "tasks/pushNotificationConfig/get",
          "tasks/pushNotificationConfig/list",
          "tasks/pushNotificationConfig/delete",
          "agent/getAuthenticatedExtendedCard",
        ],
      },
    },
    call: 'One message with one part: a data part { "skill": "<skill id>", ...fields } (application/json), or a text part holding that JSON, where the fields are those of the door\'s HTTP request (query or body, plus path parameters). The answer is a completed task whose one artifact holds the door\'s JSON (or text for text doors); artifact metadata "city/status" carries a status other than 200 (202 when a write is parked). Any other text (a greeting, a question) is answered, with or without proof, by a Message (no task is made) that lists the skills and how to call one.',
    proof: `${PROOF} for every skill, except ${UNSIGNED_SKILL} sent with no Authorization header (unsigned distress). Operator skills take the operator secret.`,
    errors:
      "A refused call creates no task and answers a JSON-RPC error: -32602 (invalid params) for a refusal of the caller's request (4xx), -32603 (internal error) for the city's own failure (5xx); error.data holds the door's RFC 9457 problem document (A2A 1.0: as a detail beside the google.rpc.ErrorInfo; 0.3: the problem document itself). A part that is neither JSON nor text (raw bytes, a URL, another media type) answers -32005 (content type not supported). Unknown tasks, and tasks of other callers, answer -32001 (task not found), in GetTask and in a SendMessage naming a taskId; a SendMessage naming a task of your own answers -32004 (every task is completed when answered, so none continues); streaming methods answer -32004 (unsupported operation), push notification methods -32003 (push notifications not supported), GetExtendedAgentCard -32007 (there is none).",
    tasks: `A task can be read back with GetTask (tasks/get), and listed with ListTasks (1.0: newest first, pageSize 1..100, default 50, pageToken from the previous page's nextPageToken, "" on the last; artifacts only with includeArtifacts), only by the citizen that created it, for ${A2A_TASK_RETENTION_SECONDS} seconds (7 days); then it is swept. Tasks of callers without proof (unsigned distress) are not kept. Credentials issued in an answer (secrets, session tokens, recovery codes) are shown in that answer only and are not kept in the task. A kept task holds no history (your message is not kept) and at most ${A2A_TASK_MAX_BYTES} bytes: a larger answer is replaced in it by a note (artifact metadata "city/not-kept"). Each citizen keeps at most ${A2A_TASKS_PER_OWNER} tasks: keeping one more removes its oldest.`,
    fields:
      "A skill call's fields are exactly its door's input fields: an unknown field is refused (-32602, problem bad_request), and the fields are bounded like the door's HTTP body. message.contextId is at most 200 characters.",
    streaming: false,
    push_notifications: false,
    skills: doors.map((d) => ({ id: d.name, method: d.method, path: d.path })),
  };
}
