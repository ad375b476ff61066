import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CityError, ERROR_CODES, ProblemSchema, toProblem } from "@/lib/errors";

describe("problem documents", () => {
  it("turns a CityError into an RFC 9457 document with its code, status and title", () => {
    const problem = toProblem(
      new CityError("rate_limited", "Too many.", { retryAfterSeconds: 30, limit: { name: "plaza", limit: 20, window_seconds: 3600 } }),
      "/api/plaza",
      "/api/plaza",
    );
    expect(problem).toMatchObject({
      type: "/problems/rate_limited",
      title: ERROR_CODES.rate_limited.title,
      status: 429,
      detail: "Too many.",
      instance: "/api/plaza",
      code: "rate_limited",
      door: "/api/plaza",
      retry_after_seconds: 30,
      limit: { name: "plaza", limit: 20, window_seconds: 3600 },
    });
    expect(ProblemSchema.safeParse(problem).success).toBe(true);
  });

  it("carries the clock first, as every JSON answer does", () => {
    const problem = toProblem(new CityError("not_found", "Nothing."), "/api/x", "/api/x", new Date(Date.UTC(2026, 10, 26, 23, 30, 5, 120)));
    expect(Object.keys(problem)[0]).toBe("now_utc");
    expect(problem.now_utc).toBe("2026-11-26T23:30:05.120Z");
    expect(Object.keys(JSON.parse(JSON.stringify(problem)))[0]).toBe("now_utc");
  });

  it("turns a zod error into a 400 that names the field", () => {
    const parsed = z.object({ name: z.string() }).safeParse({ name: 3 });
    const problem = toProblem(parsed.error, "/gate", "/gate");
    expect(problem.status).toBe(400);
    expect(problem.code).toBe("bad_request");
    expect(problem.detail).toMatch(/^name: /);
    expect(problem.errors?.[0]?.path).toBe("name");
  });

  it("hides everything about an unexpected error", () => {
    const err = new Error('insert into "citizens" values ($1) params: city_sk_secret');
    const problem = toProblem(err, "/gate", "/gate");
    expect(problem.status).toBe(500);
    expect(problem.code).toBe("internal_error");
    expect(JSON.stringify(problem)).not.toMatch(/citizens|city_sk_|insert|at .*\.ts/);
  });

  it("gives every code a status of 400 or more", () => {
    for (const { status } of Object.values(ERROR_CODES)) expect(status).toBeGreaterThanOrEqual(400);
  });
});
