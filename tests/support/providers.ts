import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type ProviderMode = "answer" | "error" | "slow";

export interface FakeProvider {
  /** Base URL to configure a physician with (the SDKs append /chat/completions or /messages). */
  baseUrl: string;
  /** Every request body received, in order (parsed JSON), with its headers. */
  received: { path: string; headers: IncomingMessage["headers"]; body: Record<string, any> }[];
  mode: ProviderMode;
  close: () => Promise<void>;
}

/**
 * A local HTTP server on 127.0.0.1 that speaks a provider's real wire format: OpenAI chat
 * completions (POST /v1/chat/completions) or Anthropic messages (POST /v1/messages). It counts
 * the calls it receives; `mode` makes it answer, fail with a 500, or answer too late.
 */
export async function startFakeProvider(protocol: "openai-chat" | "anthropic-messages", port = 0): Promise<FakeProvider> {
  const provider: FakeProvider = { baseUrl: "", received: [], mode: "answer", close: async () => {} };
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")));
    req.on("end", () => {
      const body = JSON.parse(raw || "{}") as Record<string, any>;
      provider.received.push({ path: req.url ?? "", headers: req.headers, body });
      const expected = protocol === "openai-chat" ? "/v1/chat/completions" : "/v1/messages";
      if (req.method !== "POST" || req.url !== expected) return send(res, 404, { error: { message: "not found" } });
      if (provider.mode === "error") return send(res, 500, errorBody(protocol));
      const answer = () => send(res, 200, protocol === "openai-chat" ? openAiAnswer(body) : anthropicAnswer(body));
      if (provider.mode === "slow") setTimeout(answer, 2_500).unref();
      else answer();
    });
  });
  // Idle keep-alive sockets stay open for the whole suite: a server closing one just as the client
  // reuses it (the 5 s default) would read as a provider failure.
  server.keepAliveTimeout = 600_000;
  // On a given port when a server was configured with it before this started (the browser tests' states city).
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, "127.0.0.1", resolve));
  provider.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  provider.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return provider;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function lastUserText(body: Record<string, any>): string {
  const messages = (body.messages ?? []) as { role: string; content: unknown }[];
  const user = messages.filter((m) => m.role === "user").at(-1);
  if (typeof user?.content === "string") return user.content;
  return ((user?.content ?? []) as { type: string; text?: string }[]).map((p) => p.text ?? "").join("");
}

function openAiAnswer(body: Record<string, any>) {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [{ index: 0, message: { role: "assistant", content: `asclepius heard: ${lastUserText(body).slice(0, 40)}` }, finish_reason: "stop" }],
    usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 },
  };
}

function anthropicAnswer(body: Record<string, any>) {
  return {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model: body.model,
    content: [{ type: "text", text: `hygieia heard: ${lastUserText(body).slice(0, 40)}` }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 42, output_tokens: 7 },
  };
}

function errorBody(protocol: "openai-chat" | "anthropic-messages") {
  return protocol === "openai-chat"
    ? { error: { message: "The server had an error while processing your request.", type: "server_error", code: null } }
    : { type: "error", error: { type: "api_error", message: "Internal server error" } };
}
