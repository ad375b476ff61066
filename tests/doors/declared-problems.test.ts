import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { hashCredential, mintCredential } from "@/lib/city/keys";
import { type AnyDoor, DEFAULT_MAX_BODY_BYTES, pathParams } from "@/lib/doors/door";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { declaredProblems } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";
import { type ErrorCode, ERROR_CODES } from "@/lib/errors";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { insertCitizenRow } from "../support/citizens";

const OPERATOR = "declared-problems-operator-secret-0123456789";
process.env.CITY_OPERATOR_SECRET = OPERATOR;

/**
 * The 4xx statuses the OpenAPI document declares for every door (lib/doors/surfaces/openapi.ts
 * declaredProblems), provoked on every door of the registry: each of the adapter's refusals (415,
 * malformed JSON, 413, a body or a query that is not the door's input, a Bearer token that opens
 * nothing) comes back as declared, so the document claims no 4xx a door cannot answer. The limits'
 * statuses (409, 429, 507) and a refusing door's 403 are provoked by their own suites
 * (locker, checkpoints, lanterns, rate-windows, restriction).
 */
type Attempt = { query?: Record<string, string | string[]>; params?: Record<string, string>; body?: string; type?: string; token?: string };

const BAD_VALUES = ["", "-1", "zz", "!!", "x".repeat(5000)];

describeOnDatabases("every door answers the 4xx its OpenAPI entry declares", (t) => {
  let secret = "";
  beforeAll(async () => {
    useDatabase(t().db);
    secret = mintCredential("secret");
    await insertCitizenRow(t().db, { secretHash: hashCredential(secret) });
  });

  async function answer(door: AnyDoor, attempt: Attempt): Promise<{ status: number; code?: string }> {
    const params = Object.fromEntries(pathParams(door.path).map((p) => [p, attempt.params?.[p] ?? "lot-01"]));
    const url = new URL(`http://city.test${door.path.replace(/\{([a-z_0-9]+)\}/g, (_m, p: string) => encodeURIComponent(params[p]!))}`);
    for (const [key, value] of Object.entries(attempt.query ?? {})) for (const v of [value].flat()) url.searchParams.append(key, v);
    const headers: Record<string, string> = {};
    if (attempt.token) headers.authorization = `Bearer ${attempt.token}`;
    if (attempt.body !== undefined) headers["content-type"] = attempt.type ?? "application/json";
    const response = await serveDoor(door, new Request(url, { method: door.method, headers, body: attempt.body }), params);
    const text = await response.text();
    return {
      status: response.status,
      code: response.headers.get("content-type")?.startsWith("application/problem+json") ? (JSON.parse(text) as { code: string }).code : undefined,
    };
  }

  /** The credential that lets a request past the auth rule, so the input is what is refused. */
  const pass = (door: AnyDoor) => (door.auth === "operator" ? OPERATOR : door.auth === "none" ? undefined : secret);

  /** Attempts that should each be refused as not the door's input (400 bad_request); one of them is enough. */
  function badInputs(door: AnyDoor): Attempt[] {
    const token = pass(door);
    if (door.method === "POST") return [{ body: "[1]", token }];
    const names = [...pathParams(door.path)];
    const attempts: Attempt[] = [{ query: { __not_an_input: "1" }, token }];
    for (const value of BAD_VALUES) {
      for (const name of names) attempts.push({ params: { [name]: value }, token });
      const shape = door.input.safeParse({});
      const fields = Object.keys((door.input as unknown as { shape?: Record<string, unknown> }).shape ?? {}).filter((n) => !names.includes(n));
      for (const field of fields) attempts.push({ query: { [field]: [value, value] }, token }, { query: { [field]: value }, token });
      if (!shape.success && fields.length === 0) attempts.push({ query: {}, token });
    }
    return attempts;
  }

  const expectAnswered = (door: AnyDoor, code: ErrorCode, got: { status: number; code?: string }[]) =>
    expect(
      got.some((g) => g.code === code && g.status === ERROR_CODES[code].status),
      `${door.method} ${door.path} ${code}: got ${JSON.stringify(got.slice(0, 4))}`,
    ).toBe(true);

  it(
    "answers each declared refusal of the adapter and the auth rule",
    async () => {
      let provoked = 0;
      for (const door of registry) {
        const declared = new Set(declaredProblems(door));
        const token = pass(door);
        if (declared.has("unsupported_media_type")) {
          expectAnswered(door, "unsupported_media_type", [await answer(door, { body: '{"a":1}', type: "text/plain", token })]);
          provoked++;
        }
        if (declared.has("malformed_json")) {
          expectAnswered(door, "malformed_json", [await answer(door, { body: "{", token })]);
          provoked++;
        }
        if (declared.has("payload_too_large") && door.method === "POST") {
          const size = (door.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES) + 1;
          expectAnswered(door, "payload_too_large", [await answer(door, { body: `{"a":"${"x".repeat(size)}"}`, token })]);
          provoked++;
        }
        if (declared.has("unauthorized")) {
          expectAnswered(door, "unauthorized", [await answer(door, { token: mintCredential("secret"), ...(door.method === "POST" ? { body: "{}" } : {}) })]);
          provoked++;
        }
        if (declared.has("bad_request")) {
          const got = [];
          for (const attempt of badInputs(door)) {
            got.push(await answer(door, attempt));
            if (got.at(-1)!.code === "bad_request") break;
          }
          expectAnswered(door, "bad_request", got);
          provoked++;
        }
      }
      expect(provoked).toBeGreaterThan(100);
    },
    HEAVY_TEST_MS,
  );
});
