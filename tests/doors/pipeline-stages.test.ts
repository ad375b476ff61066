import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AnyDoor, door } from "@/lib/doors/door";
import { type ConstantDocument, type DoorAnswer, type RequestContext, requestContext } from "@/lib/doors/pipeline/context";
import { doorRequestOf } from "@/lib/doors/pipeline/invoke";
import { guardDoor } from "@/lib/doors/pipeline/stages/guard";
import { parseInput } from "@/lib/doors/pipeline/stages/parse";
import { readRequest } from "@/lib/doors/pipeline/stages/read";
import { sendAnswer } from "@/lib/doors/pipeline/stages/send";
import { tagAnswer } from "@/lib/doors/pipeline/stages/tag";
import { useDatabase } from "@/lib/city/database";
import { fromMemory } from "@/lib/doors/pipeline/stages/memory";
import { runDoor } from "@/lib/doors/pipeline/stages/run";
import { signOutgoing } from "@/lib/doors/pipeline/stages/sign";
import { CityError } from "@/lib/errors";
import { describeOnDatabases } from "../support/databases";

// The stages of the pipeline that touch no database, each alone on a context made for it (the
// others, and the way as a whole, are in pipeline-way.test.ts and the doors' own suites).

const input = z.object({ word: z.string().max(5), many: z.array(z.string()).optional(), room: z.string().optional() });
const output = z.object({ word: z.string() });
const run = async (_ctx: unknown, i: { word: string }) => ({ word: i.word });
const writeDoor = door({
  name: "stage-write",
  method: "POST",
  path: "/api/stage",
  summary: "A test write.",
  auth: "none",
  maxBodyBytes: 32,
  input,
  output,
  run,
});
const readDoor = door({ name: "stage-read", method: "GET", path: "/api/stage", summary: "A test read.", auth: "none", input, output, run });
const citizenWrite = door({
  name: "stage-citizen-write",
  method: "POST",
  path: "/api/stage/citizen",
  summary: "A test write a restricted citizen is refused.",
  auth: "citizen",
  whenRestricted: "refuse",
  openWhileRestricted: (i: unknown) => (i as { word: string }).word === "open",
  input,
  output,
  run,
});

function contextOf(d: AnyDoor, request: Request, params: Record<string, string> = {}): RequestContext {
  return requestContext(d, doorRequestOf(request, request.method), { http: request, params });
}
const postOf = (body: string, type = "application/json") =>
  new Request("http://city.test/api/stage", { method: "POST", body, headers: { "content-type": type } });
const codeOf = async (work: Promise<unknown> | (() => void)) => {
  try {
    await (typeof work === "function" ? work() : work);
  } catch (err) {
    return (err as CityError).code ?? "thrown";
  }
  return "passed";
};

describe("stage read", () => {
  it("gives a body's JSON object with the path's parameters laid over it", async () => {
    const ctx = contextOf(writeDoor, postOf(JSON.stringify({ word: "hi", room: "sent" })), { room: "path" });
    await readRequest(ctx);
    expect(ctx.raw).toEqual({ word: "hi", room: "path" });
  });

  it("gives a query, a repeated name as a list", async () => {
    const ctx = contextOf(readDoor, new Request("http://city.test/api/stage?word=a&many=x&many=y"));
    await readRequest(ctx);
    expect(ctx.raw).toEqual({ word: "a", many: ["x", "y"] });
  });

  it("refuses a body over the door's size (declared or streamed), another type, bad JSON and a non-object", async () => {
    expect(await codeOf(readRequest(contextOf(writeDoor, postOf(JSON.stringify({ word: "x".repeat(40) })))))).toBe("payload_too_large");
    expect(await codeOf(readRequest(contextOf(writeDoor, postOf("{}", "text/plain"))))).toBe("unsupported_media_type");
    expect(await codeOf(readRequest(contextOf(writeDoor, postOf("{ no"))))).toBe("malformed_json");
    expect(await codeOf(readRequest(contextOf(writeDoor, postOf("[1]"))))).toBe("bad_request");
  });

  it("refuses a request that carries both a Bearer token and a signature", async () => {
    const request = new Request("http://city.test/api/stage", {
      headers: { authorization: "Bearer x", "signature-input": 'sig1=("@method");created=1', signature: "sig1=:AA==:" },
    });
    expect(await codeOf(readRequest(contextOf(readDoor, request)))).toBe("credential_conflict");
  });
});

describe("stage parse", () => {
  it("keeps the input as the schema gives it, or the failure without throwing it", () => {
    const ok = requestContext(writeDoor, doorRequestOf(postOf("{}"), "POST"), { raw: { word: "hi", extra: 1 } });
    parseInput(ok);
    expect(ok.parsed).toEqual({ ok: true, input: { word: "hi" } });
    const bad = requestContext(writeDoor, doorRequestOf(postOf("{}"), "POST"), { raw: { word: "too long" } });
    parseInput(bad);
    expect(bad.parsed!.ok).toBe(false);
  });
});

describe("stage guard", () => {
  const guarded = (d: AnyDoor, parsed: RequestContext["parsed"], tier: "citizen" | "restricted") => {
    const ctx = requestContext(d, doorRequestOf(postOf("{}"), "POST"));
    ctx.parsed = parsed;
    ctx.caller = { kind: "citizen", did: "did:web:city.test:citizens:x", tier };
    return () => guardDoor(ctx);
  };

  it("throws the parse failure the parse stage kept", () => {
    const failure = new Error("unparsed");
    expect(guarded(citizenWrite, { ok: false, error: failure }, "citizen")).toThrow(failure);
  });

  it("refuses a restricted citizen a refusing door's write, unless the door is open to it for this input", async () => {
    expect(await codeOf(guarded(citizenWrite, { ok: true, input: { word: "hi" } }, "restricted"))).toBe("forbidden");
    expect(await codeOf(guarded(citizenWrite, { ok: true, input: { word: "open" } }, "restricted"))).toBe("passed");
    expect(await codeOf(guarded(citizenWrite, { ok: true, input: { word: "hi" } }, "citizen"))).toBe("passed");
  });
});

describe("stages tag and send", () => {
  const answered = (d: AnyDoor, request: Request, answer: Partial<DoorAnswer> = {}) => {
    const ctx = contextOf(d, request);
    ctx.answer = { status: 200, headers: {}, body: { word: "hi" }, changesAt: null, ...answer };
    return ctx;
  };

  it("tags a reading's 200 and answers 304 with the validators only to a matching If-None-Match", async () => {
    const first = answered(readDoor, new Request("http://city.test/api/stage"));
    await tagAnswer(first);
    sendAnswer(first);
    const etag = first.response!.headers.get("etag")!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(await first.response!.json()).toEqual({ word: "hi" });
    const again = answered(readDoor, new Request("http://city.test/api/stage", { headers: { "if-none-match": `W/${etag}` } }));
    await tagAnswer(again);
    expect(again.outgoing!.notModified).toBe(true);
    sendAnswer(again);
    expect(again.response!.status).toBe(304);
    expect(await again.response!.text()).toBe("");
    expect(again.response!.headers.get("content-type")).toBeNull();
    expect(again.response!.headers.get("etag")).toBe(etag);
  });

  it("never tags a write or a refusal, and keeps neither", async () => {
    const write = answered(writeDoor, postOf("{}"), { status: 201 });
    await tagAnswer(write);
    expect(write.outgoing!.headers.get("etag")).toBeNull();
    expect(write.outgoing!.headers.get("cache-control")).toBe("no-store");
    const refusal = answered(readDoor, new Request("http://city.test/api/stage"), { status: 404 });
    await tagAnswer(refusal);
    expect(refusal.outgoing!.headers.get("etag")).toBeNull();
  });

  it("keeps a caller's answer private and varies it by Authorization", async () => {
    const ctx = answered({ ...readDoor, auth: "citizen" }, new Request("http://city.test/api/stage"));
    await tagAnswer(ctx);
    expect(ctx.outgoing!.headers.get("cache-control")).toBe("private, no-store");
    expect(ctx.outgoing!.headers.get("vary")).toBe("Authorization");
  });

  it("keeps an answer this request built for memory, then serves the held form at this moment", async () => {
    const held: ConstantDocument = { status: 200, headers: {}, tag: '"held"', lastModified: "Mon, 30 Nov 2026 00:00:00 GMT", textAt: async () => "held text" };
    const kept: DoorAnswer[] = [];
    const ctx = answered({ ...readDoor, cache: "static" }, new Request("http://city.test/api/stage"));
    ctx.keeper = { keep: (answer) => (kept.push(answer), held), fail: () => undefined };
    await tagAnswer(ctx);
    expect(kept).toEqual([ctx.answer]);
    expect(ctx.keeper).toBeNull();
    sendAnswer(ctx);
    expect(await ctx.response!.text()).toBe("held text");
    expect(ctx.response!.headers.get("etag")).toBe('"held"');
    expect(ctx.response!.headers.get("last-modified")).toBe(held.lastModified);
    const since = contextOf(readDoor, new Request("http://city.test/api/stage", { headers: { "if-modified-since": held.lastModified! } }));
    since.held = held;
    await tagAnswer(since);
    expect(since.outgoing!.notModified).toBe(true);
  });

  it("sends a door's own status and headers with its content type", async () => {
    const ctx = answered(writeDoor, postOf("{}"), { status: 202, headers: { "Retry-After": "5" } });
    await tagAnswer(ctx);
    sendAnswer(ctx);
    expect(ctx.response!.status).toBe(202);
    expect(ctx.response!.headers.get("retry-after")).toBe("5");
    expect(ctx.response!.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });
});

describeOnDatabases("the stages that touch the database, alone", (t) => {
  beforeAll(() => useDatabase(t().db));
  const running = (d: AnyDoor, parsedInput: unknown) => {
    const ctx = requestContext(d, doorRequestOf(postOf("{}"), "POST"));
    ctx.parsed = { ok: true, input: parsedInput };
    ctx.caller = { kind: "visitor" };
    ctx.handle = t().db;
    return ctx;
  };

  it("run: keeps the door's checked answer, a refusal that keeps its writes, and never an answer outside the schema", async () => {
    const ok = running(writeDoor, { word: "hi" });
    await runDoor(ok);
    expect(ok.outcome).toMatchObject({ body: { word: "hi" } });
    const kept = new CityError("rate_limited", "counted", { keepWrites: true });
    const counted = running({ ...writeDoor, run: async () => Promise.reject(kept) }, { word: "hi" });
    await runDoor(counted);
    expect(counted.outcome).toEqual({ kept });
    const wrong = running({ ...writeDoor, run: async () => ({ word: 5 }) }, { word: "hi" });
    expect(await codeOf(runDoor(wrong))).toBe("internal_error");
    expect(wrong.outcome).toBeNull();
  });

  it("memory: gives the first request a keeper and the next the held answer, which the keeper's failure drops", async () => {
    const constant = { ...readDoor, name: `stage-constant-${t().driver}`, cache: "static" as const };
    const first = contextOf(constant, new Request("http://city.test/api/stage"));
    await fromMemory(first);
    expect(first.keeper).not.toBeNull();
    first.keeper!.fail(new Error("build failed"));
    const second = contextOf(constant, new Request("http://city.test/api/stage"));
    await fromMemory(second);
    expect(second.keeper, "a failed build is not held").not.toBeNull();
    const document = second.keeper!.keep({ status: 200, headers: {}, body: { word: "kept" }, changesAt: null });
    const third = contextOf(constant, new Request("http://city.test/api/stage"));
    await fromMemory(third);
    expect(third.keeper).toBeNull();
    expect(third.held).toBe(document);
    expect(await third.held!.textAt(new Date())).toBe('{"word":"kept"}');
  });

  it("sign: adds the digest of the exact bytes and the city's signature over them", async () => {
    const ctx = contextOf({ ...readDoor, signsAnswer: { tag: "stage-test" } }, new Request("http://city.test/api/stage"));
    ctx.outgoing = { status: 200, headers: new Headers(), body: '{"word":"hi"}', notModified: false };
    await signOutgoing(ctx);
    const digest = (await import("node:crypto")).createHash("sha256").update('{"word":"hi"}').digest("base64");
    expect(ctx.outgoing.headers.get("content-digest")).toBe(`sha-256=:${digest}:`);
    expect(ctx.outgoing.headers.get("signature-input")).toMatch(/^sig1=\("@authority";req "content-digest"\);.*tag="stage-test"/);
    expect(ctx.outgoing.headers.get("signature")).toMatch(/^sig1=:[A-Za-z0-9+/]+=*:$/);
  });
});
