import { type AnyDoor, DEFAULT_MAX_BODY_BYTES } from "@/lib/doors/door";
import { CityError } from "@/lib/errors";
import type { RequestContext } from "../context";
import { checkSignedBody } from "../signature";

/**
 * Stage `read`: the request's input, bounded. A GET or DELETE gives its query; any other method its
 * body, at most the door's size (a declared or actual larger body is refused before parsing), as a
 * JSON object. A signed request's Content-Digest is checked over the exact bytes before anything
 * parses them (signature.ts). The route's path parameters are laid over what the client sent.
 */
export async function readRequest(ctx: RequestContext): Promise<void> {
  ctx.raw = { ...(await readInput(ctx.door, ctx.http!)), ...ctx.params };
}

async function readInput(door: AnyDoor, request: Request): Promise<Record<string, unknown>> {
  if (door.method === "GET" || door.method === "DELETE") {
    const query: Record<string, string | string[]> = {};
    const { searchParams } = new URL(request.url);
    for (const key of new Set(searchParams.keys())) {
      const values = searchParams.getAll(key);
      query[key] = values.length === 1 ? values[0]! : values;
    }
    // The city reads no body here: a signature covers no digest (lib/doors/pipeline/signature.ts).
    checkSignedBody(request, new Uint8Array());
    return query;
  }
  const bytes = await readBodyBytes(request, door.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  checkSignedBody(request, bytes);
  const text = decodeBody(bytes);
  if (text.trim() === "") return {};
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(type)) {
    throw new CityError("unsupported_media_type", "Send the body as JSON with Content-Type: application/json.");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CityError("malformed_json", "The body could not be parsed as JSON.");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new CityError("bad_request", "The body must be a JSON object.");
  }
  return parsed as Record<string, unknown>;
}

function decodeBody(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes);
}

/** The exact bytes of a body, at most `limit` of them: a declared or actual larger body is refused (413) before anything reads it whole. */
export async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  const tooLarge = () => bodyTooLarge(limit);
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** The 413 of a body (or tool arguments) over the door's published size. */
export function bodyTooLarge(limit: number): CityError {
  return new CityError("payload_too_large", `This door accepts bodies of at most ${limit} bytes.`, { limit: { name: "body_bytes", limit } });
}

/** The limit the HTTP door applies to its body, applied to arguments that arrive another way (MCP, A2A). */
export function checkBodySize(door: AnyDoor, args: unknown): void {
  const limit = door.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (Buffer.byteLength(JSON.stringify(args)) > limit) throw bodyTooLarge(limit);
}
