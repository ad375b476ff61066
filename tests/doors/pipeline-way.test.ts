import { beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { useDatabase } from "@/lib/city/database";
import { door } from "@/lib/doors/door";
import { readPeerKeys } from "@/lib/doors/declarations/directory/peers";
import { readLocker } from "@/lib/doors/declarations/shelves/locker";
import { type RequestContext, requestContext, type StageName } from "@/lib/doors/pipeline/context";
import { wayOf } from "@/lib/doors/pipeline/http";
import { doorRequestOf } from "@/lib/doors/pipeline/invoke";
import { runWay, STAGES } from "@/lib/doors/pipeline/way";
import { readCensusDoor, readLlms } from "@/lib/doors/surfaces/discovery";
import { CityError } from "@/lib/errors";
import { describeOnDatabases } from "../support/databases";
import { admit } from "../support/gate";

// The way every request takes (lib/doors/pipeline/way.ts), as each kind of request takes it: the
// stages it entered, in order, each once. The expected ways are written out here, not read from
// the list they check.
const DOOR_RUNS: StageName[] = ["parse", "caller", "guard", "run", "settle"];

const echo = door({
  name: "way-echo-test",
  method: "POST",
  path: "/api/way-echo",
  summary: "Echoes a word (test door).",
  auth: "none",
  input: z.object({ word: z.string().max(10) }),
  output: z.object({ now_utc: z.string(), word: z.string() }),
  run: async (ctx, input) => ({ now_utc: ctx.now.toISOString(), word: input.word }),
});

const get = (path: string, headers: Record<string, string> = {}) => new Request(`http://city.test${path}`, { headers });
const post = (path: string, body: string) => new Request(`http://city.test${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });

/** The way a request took when it failed: its context's trace at the moment of the throw. */
async function refusedWay(ctx: RequestContext): Promise<{ trace: StageName[]; error: unknown }> {
  const error = await runWay(ctx).then(
    () => null,
    (err: unknown) => err,
  );
  return { trace: ctx.trace, error };
}

describeOnDatabases("a request's way through the pipeline", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("lists every stage once, in the order the pipeline's description gives", () => {
    expect(STAGES.map((s) => s.name)).toEqual(["read", "memory", "parse", "caller", "guard", "run", "settle", "tag", "sign", "send"]);
  });

  it("takes a write from reading its body to sending its answer, the caller, guard and run in the write's transaction", async () => {
    const ctx = await wayOf(echo, post("/api/way-echo", JSON.stringify({ word: "hi" })));
    expect(ctx.trace).toEqual(["read", ...DOOR_RUNS, "tag", "send"]);
    expect(ctx.inTransaction).toBe(true);
    expect(ctx.handle).not.toBe(ctx.db);
    expect(ctx.response!.status).toBe(200);
    expect(await ctx.response!.json()).toMatchObject({ word: "hi" });
  });

  it("ends a malformed write at the guard, after its caller and outside any transaction (401 before 400)", async () => {
    const request = post("/api/way-echo", JSON.stringify({ word: "far too long a word" }));
    const ctx = requestContext(echo, doorRequestOf(request, "POST"), { http: request });
    const { trace, error } = await refusedWay(ctx);
    expect(trace).toEqual(["read", "parse", "caller", "guard"]);
    expect(ctx.inTransaction).toBe(false);
    expect(error).toBeInstanceOf(z.ZodError);
  });

  it("ends a body over the door's size at read, before anything parses it", async () => {
    const request = post("/api/way-echo", JSON.stringify({ word: "x".repeat(20_000) }));
    const { trace, error } = await refusedWay(requestContext(echo, doorRequestOf(request, "POST"), { http: request }));
    expect(trace).toEqual(["read"]);
    expect((error as CityError).code).toBe("payload_too_large");
  });

  it("ends a reading without its credential at the caller, and the door never runs", async () => {
    const request = get("/api/locker");
    const { trace, error } = await refusedWay(requestContext(readLocker, doorRequestOf(request, "GET"), { http: request }));
    expect(trace).toEqual(["read", "parse", "caller"]);
    expect((error as CityError).code).toBe("unauthorized");
  });

  it("builds a constant document once, reading nothing of the request, then serves it from memory", async () => {
    const built = await wayOf(readLlms, get("/llms.txt"));
    expect(built.trace).toEqual(["memory", ...DOOR_RUNS, "tag", "send"]);
    const held = await wayOf(readLlms, get("/llms.txt"));
    expect(held.trace).toEqual(["memory", "tag", "send"]);
    expect(await held.response!.text()).toBe(await built.response!.text());
  });

  it("builds a versioned read at its versions, then serves it from memory, 304 included", async () => {
    // An admission moves the census' versions: whatever another test left in memory is old now.
    await admit();
    const built = await wayOf(readCensusDoor, get("/city.json"));
    expect(built.trace).toEqual(["read", "memory", ...DOOR_RUNS, "tag", "send"]);
    const held = await wayOf(readCensusDoor, get("/city.json"));
    expect(held.trace).toEqual(["read", "memory", "tag", "send"]);
    const tag = held.response!.headers.get("etag")!;
    const unchanged = await wayOf(readCensusDoor, get("/city.json", { "if-none-match": tag }));
    expect(unchanged.trace).toEqual(["read", "memory", "tag", "send"]);
    expect(unchanged.response!.status).toBe(304);
  });

  it("waits for the one build of a versioned read when requests come together, and the door runs once", async () => {
    await admit();
    const together = await Promise.all([1, 2, 3].map(() => wayOf(readCensusDoor, get("/city.json"))));
    const builds = together.filter((ctx) => ctx.trace.includes("run"));
    expect(builds).toHaveLength(1);
    // One content (the tag leaves the clock fields out, written in live per answer).
    expect(new Set(together.map((ctx) => ctx.response!.headers.get("etag"))).size).toBe(1);
  });

  it("signs a 200 of a door that signs its answers, and not its 304", async () => {
    const { did } = await admit();
    const signed = await wayOf(readPeerKeys, get(`/api/peers/${did}/keys`), { did });
    expect(signed.trace).toEqual(["read", ...DOOR_RUNS, "tag", "sign", "send"]);
    expect(signed.response!.headers.get("signature")).toBeTruthy();
    const tag = signed.response!.headers.get("etag")!;
    const unchanged = await wayOf(readPeerKeys, get(`/api/peers/${did}/keys`, { "if-none-match": tag }), { did });
    expect(unchanged.trace).toEqual(["read", ...DOOR_RUNS, "tag", "send"]);
    expect(unchanged.response!.status).toBe(304);
  });

  it("takes a surface's call (MCP, A2A) from parse to settle, its answer in the context", async () => {
    const request = post("/mcp", "{}");
    const ctx = requestContext(echo, doorRequestOf(request, "POST"), { raw: { word: "tool" } });
    await runWay(ctx, "parse", "settle");
    expect(ctx.trace).toEqual(DOOR_RUNS);
    expect(ctx.answer).toMatchObject({ status: 200, body: { word: "tool" } });
    expect(ctx.response).toBeNull();
  });
});
