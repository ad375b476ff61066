import { afterEach, describe, expect, it, vi } from "vitest";
import { logAnswer } from "@/lib/logger";

const ANSWER = { request_id: "r-1", door: "read-beacon", method: "GET", status: 200, duration_ms: 3 };

/** The access lines logAnswer prints under an environment, as parsed JSON. */
function linesUnder(env: { NODE_ENV: string; CITY_ACCESS_LOG?: string }): Record<string, unknown>[] {
  vi.stubEnv("NODE_ENV", env.NODE_ENV);
  vi.stubEnv("CITY_ACCESS_LOG", env.CITY_ACCESS_LOG ?? "");
  const printed = vi.spyOn(console, "log").mockImplementation(() => {});
  try {
    logAnswer(ANSWER);
    return printed.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
  } finally {
    vi.restoreAllMocks();
  }
}

afterEach(() => vi.unstubAllEnvs());

describe("the access line: one line a request", () => {
  it("is the city's own under next start, none under next dev (which prints its own), and CITY_ACCESS_LOG decides when set", () => {
    expect(linesUnder({ NODE_ENV: "production" })).toEqual([expect.objectContaining({ level: "info", msg: "answer", ...ANSWER })]);
    expect(linesUnder({ NODE_ENV: "development" })).toEqual([]);
    expect(linesUnder({ NODE_ENV: "development", CITY_ACCESS_LOG: "on" })).toHaveLength(1);
    expect(linesUnder({ NODE_ENV: "production", CITY_ACCESS_LOG: "off" })).toEqual([]);
  });
});
