import { beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { useDatabase } from "@/lib/city/database";
import { door } from "@/lib/doors/door";
import { routes, serveDoor } from "@/lib/doors/pipeline/http";
import { readCensusDoor } from "@/lib/doors/surfaces/discovery";
import { ProblemSchema } from "@/lib/errors";
import { describeOnDatabases } from "../support/databases";
import { insertCitizenRow } from "../support/citizens";

const echo = door({
  name: "echo-test",
  method: "POST",
  path: "/api/echo/{room}",
  summary: "Echoes a word (test door).",
  auth: "none",
  maxBodyBytes: 64,
  input: z.object({ room: z.string(), word: z.string().max(10) }),
  output: z.object({ now_utc: z.string(), room: z.string(), word: z.string() }),
  run: async (ctx, input) => ({ now_utc: ctx.now.toISOString(), room: input.room, word: input.word }),
});

const post = (body: string | undefined, headers: Record<string, string> = { "content-type": "application/json" }) =>
  serveDoor(echo, new Request("http://city.test/api/echo/hall", { method: "POST", body, headers }), { room: "hall" });

async function expectProblem(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  const body = await response.json();
  expect(ProblemSchema.parse(body)).toMatchObject({ status, code, instance: "/api/echo/hall", door: "/api/echo/{room}" });
  return body;
}

describeOnDatabases("door adapter", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("answers a valid request with JSON, now_utc first, path parameters filled", async () => {
    const response = await post(JSON.stringify({ word: "hello" }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const text = await response.text();
    expect(text.startsWith('{"now_utc":')).toBe(true);
    expect(JSON.parse(text)).toMatchObject({ room: "hall", word: "hello" });
  });

  it("answers malformed JSON with a 400 problem", async () => {
    await expectProblem(await post("{ nope"), 400, "malformed_json");
  });

  it("answers a body that is not a JSON object with a 400 problem", async () => {
    await expectProblem(await post("[1,2]"), 400, "bad_request");
  });

  it("answers a wrong content type with a 415 problem", async () => {
    await expectProblem(await post(JSON.stringify({ word: "x" }), { "content-type": "text/plain" }), 415, "unsupported_media_type");
  });

  it("refuses an oversized body with 413 before parsing, declared or streamed", async () => {
    const big = JSON.stringify({ word: "x".repeat(200) });
    const problem = await expectProblem(await post(big), 413, "payload_too_large");
    expect(problem.limit).toEqual({ name: "body_bytes", limit: 64 });
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("{ not even json " + "y".repeat(100)));
        controller.close();
      },
    });
    const streamed = await serveDoor(
      echo,
      new Request("http://city.test/api/echo/hall", {
        method: "POST",
        body: stream,
        headers: { "content-type": "application/json" },
        duplex: "half",
      } as RequestInit),
      { room: "hall" },
    );
    await expectProblem(streamed, 413, "payload_too_large");
  });

  it("answers invalid fields with a 400 problem that names the field", async () => {
    const problem = await expectProblem(await post(JSON.stringify({ word: "far too long a word" })), 400, "bad_request");
    expect(problem.errors[0].path).toBe("word");
  });

  it("answers an unserved method with a 405 problem and Allow", async () => {
    const { GET } = routes(echo);
    const response = await GET(new Request("http://city.test/api/echo/hall"), { params: Promise.resolve({ room: "hall" }) });
    await expectProblem(response, 405, "method_not_allowed");
    expect(response.headers.get("allow")).toBe("POST");
  });

  it("never sends an answer outside the door's output schema", async () => {
    const liar = door({ ...echo, name: "liar-test", run: async () => ({ now_utc: "x", room: 1 }) as never });
    const response = await serveDoor(
      liar,
      new Request("http://city.test/api/echo/hall", { method: "POST", body: '{"word":"a"}', headers: { "content-type": "application/json" } }),
      { room: "hall" },
    );
    const body = await expectProblem(response, 500, "internal_error");
    expect(JSON.stringify(body)).not.toContain('"room":');
  });

  it("counts the census from real rows only", async () => {
    const read = async () => await (await serveDoor(readCensusDoor, new Request("http://city.test/city.json"))).json();
    const empty = await read();
    expect(empty).toMatchObject({ occupancy: 0, citizens: 0, house: 0, outside: 0, hotelGuests: 0, lotsOccupied: 0, fakeTide: 0, tide: 0 });
    await insertCitizenRow(t().db, { bedId: "bed-1" });
    await insertCitizenRow(t().db, { bedId: null, residencyStatus: "away" });
    await insertCitizenRow(t().db, { bedId: null, residencyStatus: "exported" });
    const counted = await read();
    expect(counted).toMatchObject({ occupancy: 1, hotelGuests: 1, citizens: 2, house: 1, outside: 1, fakeTide: 0 });
  });
});
