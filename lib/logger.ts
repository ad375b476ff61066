import { randomUUID } from "node:crypto";

/** The fields a log line may carry: names, codes, numbers. Never a secret, key or body. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** One structured log line (JSON) on stdout, or stderr for errors. */
export function logLine(level: "info" | "warn" | "error", message: string, fields: LogFields = {}): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.log(line);
}

/**
 * The access line of one answer. `next dev` prints a line of its own for every request (method,
 * path, status, time), so in development the city's is left out unless CITY_ACCESS_LOG=on: one line
 * a request either way (`next start` prints none of its own). CITY_ACCESS_LOG=off silences it
 * everywhere (the test runner sets it).
 */
export function logAnswer(fields: { request_id: string; door: string; method: string; status: number; duration_ms: number }): void {
  const setting = process.env.CITY_ACCESS_LOG;
  if (setting === "off" || (process.env.NODE_ENV === "development" && setting !== "on")) return;
  logLine(fields.status >= 500 ? "error" : "info", "answer", fields);
}

/**
 * The id of one answer, made by the city for every answer: an X-Request-Id a client sends is never
 * trusted or echoed (doors do not pass through the proxy, so nothing in front of them sets one).
 */
export { randomUUID as newRequestId };

/**
 * Logs that something failed without its message: driver messages can carry query parameters,
 * and parameters can carry secrets or message bodies, which are never logged.
 */
export function logFailure(where: string, err: unknown): void {
  const chain: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const name = e instanceof Error ? e.constructor.name : typeof e;
    const code = (e as { code?: unknown }).code;
    chain.push(typeof code === "string" ? `${name}(${code})` : name);
    e = (e as { cause?: unknown }).cause;
  }
  logLine("error", "failure", { where, chain: chain.join(" <- ") });
}
