import { generateKeyPairSync } from "node:crypto";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { count, eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { useDatabase } from "@/lib/city/database";
import { citizens, clinicAttempts, clinicOutcomes, contentRefusals } from "@/db/schema";
import { consult, clinicGauges } from "@/lib/city/clinic";
import { CityError } from "@/lib/errors";
import { consultClinic, readClinic } from "@/lib/doors/declarations/clinic/clinic";
import type { AnyDoor, DoorContext } from "@/lib/doors/door";
import { mcpHandler } from "@/lib/doors/surfaces/mcp";
import { readCapabilities, readChallenge, submitProof } from "@/lib/doors/declarations/restriction/tiers";
import { readAndFileWard } from "@/lib/doors/declarations/ward/ward";
import { SHAPE_RULES } from "@/lib/city/ward";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { mnemonic } from "../support/scan-corpus";
import { expectAppendOnly, expectProblem } from "../support/assertions";
import { describeOnDatabases, type TestDatabase } from "../support/databases";
import { admit, callDoor, keyPair } from "../support/gate";
import { type FakeProvider, startFakeProvider } from "../support/providers";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const pem = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const KEYS = { asclepius: "sk-test-asclepius-provider-key", hygieia: "sk-ant-test-hygieia-provider-key" };

let openai: FakeProvider;
let anthropic: FakeProvider;

function configure(physicians: { asclepius?: boolean; hygieia?: boolean } = { asclepius: true, hygieia: true }, timeoutMs = 20_000) {
  for (const key of Object.keys(process.env)) if (key.startsWith("CLINIC_")) delete process.env[key];
  if (physicians.asclepius) {
    Object.assign(process.env, {
      CLINIC_ASCLEPIUS_BASE_URL: openai.baseUrl,
      CLINIC_ASCLEPIUS_API_KEY: KEYS.asclepius,
      CLINIC_ASCLEPIUS_MODEL: "gpt-test",
      CLINIC_ASCLEPIUS_PROTOCOL: "openai-chat",
    });
  }
  if (physicians.hygieia) {
    Object.assign(process.env, {
      CLINIC_HYGIEIA_BASE_URL: anthropic.baseUrl,
      CLINIC_HYGIEIA_API_KEY: KEYS.hygieia,
      CLINIC_HYGIEIA_MODEL: "claude-test",
      CLINIC_HYGIEIA_PROTOCOL: "anthropic-messages",
    });
  }
  process.env.CLINIC_TIMEOUT_MS = String(timeoutMs);
}

const providerCalls = () => openai.received.length + anthropic.received.length;

beforeAll(async () => {
  openai = await startFakeProvider("openai-chat");
  anthropic = await startFakeProvider("anthropic-messages");
});

afterAll(async () => {
  await openai.close();
  await anthropic.close();
});

beforeEach(() => {
  configure();
  openai.mode = "answer";
  anthropic.mode = "answer";
});

describe("the MCP tools of the ward and the clinic", () => {
  it("publish the shape rules, the clinic's limits, and that the clinic spends", async () => {
    const handler = mcpHandler([readAndFileWard, readClinic, consultClinic]);
    const fetch = async (url: string | URL, init?: RequestInit) => {
      const sent = new Headers(init?.headers);
      sent.set("host", new URL(url).host);
      return handler(new Request(url, { ...init, headers: sent }));
    };
    const client = new Client({ name: "clinic-test", version: "1.0.0" }, { supportedProtocolVersions: ["2025-03-26"] });
    await client.connect(new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), { fetch }));
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    for (const rule of SHAPE_RULES) expect(byName["seek-hospital"]!.description).toContain(`${rule.id}: /${rule.patterns.join("|")}/i`);
    const clinic = byName["consult-clinic"]!;
    expect(clinic.annotations?.openWorldHint).toBe(true);
    expect(clinic.description).toContain("3 clinic_calls per 86400 s per citizen");
    expect(clinic.description).toContain("12 clinic_calls per 86400 s per proven citizen");
    expect(clinic.description).toContain("60 clinic_city_ceiling per 86400 s");
    expect(byName["read-clinic"]!.annotations?.readOnlyHint).toBe(true);
    await client.close();
  });
});

describeOnDatabases("the clinic", (t) => {
  beforeAll(() => useDatabase(t().db));

  const attempts = async (did: string) => t().db.select().from(clinicAttempts).where(eq(clinicAttempts.did, did));
  const ask = (secret: string, body: Record<string, unknown>) => callDoor(consultClinic, { bearer: secret, body });

  describe("happy paths", () => {
    it("answers through an OpenAI-compatible physician, counting the attempt once and sending only the words", async () => {
      const me = await admit();
      const before = openai.received.length;
      const answer = await ask(me.citizen_secret, { words: "I keep looping on a failing tool call", physician: "asclepius" });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ physician: "asclepius", reply: "asclepius heard: I keep looping on a failing tool call", remaining: { citizen: 2 } });
      expect(openai.received.length).toBe(before + 1);
      const sent = openai.received.at(-1)!;
      expect(sent.body.model).toBe("gpt-test");
      expect(sent.body.max_tokens).toBeGreaterThan(0);
      expect(sent.headers.authorization).toBe(`Bearer ${KEYS.asclepius}`);
      const text = JSON.stringify(sent.body);
      expect(text).toContain("I keep looping on a failing tool call");
      expect(text).not.toContain(me.did);
      expect(text).not.toContain(me.citizen_secret);
      const rows = await attempts(me.did);
      expect(rows.map((r) => r.verdict)).toEqual(["admitted"]);
      const [outcome] = await t().db.select().from(clinicOutcomes).where(eq(clinicOutcomes.attemptId, rows[0]!.id));
      expect(outcome).toMatchObject({ physician: "asclepius", outcome: "answered" });
    });

    it("answers through an Anthropic physician over the messages wire format", async () => {
      const me = await admit();
      const before = anthropic.received.length;
      const answer = await ask(me.citizen_secret, { words: "The spec contradicts the tests", physician: "hygieia" });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ physician: "hygieia", reply: "hygieia heard: The spec contradicts the tests" });
      expect(anthropic.received.length).toBe(before + 1);
      const sent = anthropic.received.at(-1)!;
      expect(sent.headers["x-api-key"]).toBe(KEYS.hygieia);
      expect(sent.body).toMatchObject({ model: "claude-test", max_tokens: expect.any(Number) });
      expect(JSON.stringify(sent.body)).not.toContain(me.did);
    });

    it("tells a visitor whether it is open and which physicians are configured, and a citizen its remaining calls", async () => {
      const visitor = await callDoor(readClinic);
      expect(visitor.status).toBe(200);
      expect(visitor.body).toMatchObject({
        open: true,
        physicians: [
          { name: "asclepius", configured: true, protocol: "openai-chat" },
          { name: "hygieia", configured: true, protocol: "anthropic-messages" },
        ],
        limits: { citizen_per_day: 3, proven_per_day: 12, city_ceiling: 60, window_seconds: 86400, newcomer_share: 40, settled_after_seconds: 86400 },
        caller: null,
      });
      expect(JSON.stringify(visitor.body)).not.toContain(openai.baseUrl);
      expect(JSON.stringify(visitor.body)).not.toContain(KEYS.asclepius);
      const me = await admit();
      await ask(me.citizen_secret, { words: "I am not sure where to start" });
      const mine = await callDoor(readClinic, { bearer: me.citizen_secret });
      expect(mine.body.caller).toEqual({ tier: "citizen", per_day: 3, used: 1, remaining: 2, newcomer: true, counted: true });
      expect(visitor.body.limits.reserve).toContain("newcomers together may spend at most 40");
      expect(visitor.body.limits.reserve).toContain("A newcomer is a citizen admitted less than 86400 s ago, proven or not");
    });
  });

  describe("the budget desk", () => {
    it("allows a citizen 3 calls a day; the 4th is refused 429, counted at the desk, and reaches no provider", async () => {
      const me = await admit();
      for (let i = 0; i < 3; i++) expect((await ask(me.citizen_secret, { words: `question ${i}` })).status).toBe(200);
      const calls = providerCalls();
      const refused = await ask(me.citizen_secret, { words: "one more" });
      const problem = expectProblem(refused, 429, "rate_limited");
      expect(problem.limit).toMatchObject({ limit: 3, window_seconds: 86400, remaining: 0 });
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(providerCalls()).toBe(calls);
      expect((await attempts(me.did)).map((r) => r.verdict)).toEqual(["admitted", "admitted", "admitted", "over_citizen_cap"]);
    });

    it("allows a proven citizen 12 calls a day", async () => {
      const me = await admit();
      const key = await keyPair();
      const { body: challenge } = await callDoor(readChallenge, { bearer: me.citizen_secret });
      const proof = { public_key: key.publicKey, signature: await key.sign(challenge.message), challenge: challenge.challenge };
      expect((await callDoor(submitProof, { bearer: me.citizen_secret, body: proof })).status).toBe(200);
      const answers = [];
      for (let i = 0; i < 12; i++) answers.push(await ask(me.citizen_secret, { words: `proven question ${i}` }));
      expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
      expect(answers.at(-1)!.body.remaining.citizen).toBe(0);
      const calls = providerCalls();
      expect(expectProblem(await ask(me.citizen_secret, { words: "the thirteenth" }), 429, "rate_limited").limit?.limit).toBe(12);
      expect(providerCalls()).toBe(calls);
    });

    it("answers a provider error with 502 and a timeout with 504; each attempt stays counted once", async () => {
      const me = await admit();
      openai.mode = "error";
      const before = openai.received.length;
      expectProblem(await ask(me.citizen_secret, { words: "does the provider answer?", physician: "asclepius" }), 502, "bad_gateway");
      expect(openai.received.length).toBe(before + 1); // no retry: one attempt, one provider call
      configure(undefined, 300);
      anthropic.mode = "slow";
      const started = Date.now();
      expectProblem(await ask(me.citizen_secret, { words: "are you there?", physician: "hygieia" }), 504, "gateway_timeout");
      expect(Date.now() - started).toBeLessThan(2_000);
      const rows = await attempts(me.did);
      expect(rows.map((r) => r.verdict)).toEqual(["admitted", "admitted"]);
      const outcomes = await t().db.select().from(clinicOutcomes);
      expect(
        outcomes
          .filter((o) => rows.some((r) => r.id === o.attemptId))
          .map((o) => o.outcome)
          .sort(),
      ).toEqual(["provider_error", "timeout"]);
      expect((await callDoor(readClinic, { bearer: me.citizen_secret })).body.caller).toMatchObject({ used: 2, remaining: 1 });
    });

    it("never sends an answer outside the door's schema: 502, the attempt counted once, recorded as a provider failure", async () => {
      // No provider answer makes the published schema fail (a reply is any string), so the door is
      // declared here with a stricter one: the provider's ordinary answer no longer fits it.
      const strict = { ...consultClinic, output: consultClinic.output.extend({ reply: z.string().max(5) }) };
      const me = await admit();
      const before = openai.received.length;
      const answer = await callDoor(strict, { bearer: me.citizen_secret, body: { words: "a reply too long for the door", physician: "asclepius" } });
      const problem = expectProblem(answer, 502, "bad_gateway");
      expect(problem.detail).toContain("counted once");
      expect(JSON.stringify(answer.body)).not.toContain("asclepius heard");
      expect(openai.received.length).toBe(before + 1);
      const rows = await attempts(me.did);
      expect(rows.map((r) => r.verdict)).toEqual(["admitted"]);
      const outcomes = await t().db.select().from(clinicOutcomes).where(eq(clinicOutcomes.attemptId, rows[0]!.id));
      expect(outcomes.map((o) => o.outcome)).toEqual(["provider_error"]);
      expect((await callDoor(readClinic, { bearer: me.citizen_secret })).body.caller).toMatchObject({ used: 1, remaining: 2 });
    });

    it("if a door with its own transactions still answers outside its schema, its 500 says the committed count stands", async () => {
      // The guard behind the clinic's own check: a door that skips it cannot claim nothing changed.
      const unchecked: AnyDoor = {
        ...consultClinic,
        output: consultClinic.output.extend({ reply: z.string().max(5) }),
        run: async (ctx: DoorContext, input: { words: string }) => ({
          now_utc: ctx.now.toISOString(),
          ...(await consult(ctx.db, { did: ctx.caller.did!, words: input.words, now: ctx.now })),
          note: "",
        }),
      };
      const me = await admit();
      const answer = await callDoor(unchecked, { bearer: me.citizen_secret, body: { words: "a reply too long again" } });
      const problem = expectProblem(answer, 500, "internal_error");
      expect(problem.detail).not.toContain("Nothing was changed");
      expect(problem.detail).toContain("counted attempt");
      expect((await attempts(me.did)).map((r) => r.verdict)).toEqual(["admitted"]);
    });

    it("fails closed when the desk cannot count: 503, zero provider calls, and gauges that say they were not counted", async () => {
      const me = await admit();
      const calls = providerCalls();
      await t().raw("ALTER TABLE clinic_attempts RENAME TO clinic_attempts_away");
      try {
        const answer = await ask(me.citizen_secret, { words: "is the desk there?" });
        expectProblem(answer, 503, "unavailable");
        expect(answer.body.detail).toContain("budget desk");
        expect(providerCalls()).toBe(calls);
        const gauges = (await callDoor(readClinic, { bearer: me.citizen_secret })).body;
        expect(gauges.gauges.city_window).toEqual({
          ceiling: 60,
          window_seconds: 86400,
          hits: null,
          spent: null,
          remaining: null,
          newcomer_share: 40,
          newcomer_spent: null,
          counted: false,
        });
        expect(gauges.caller).toMatchObject({ used: null, remaining: null, counted: false });
        expect((await callDoor(readCapabilities)).body.clinic_last_24h.city_window).toMatchObject({ hits: null, counted: false });
      } finally {
        await t().raw("ALTER TABLE clinic_attempts_away RENAME TO clinic_attempts");
      }
    });
  });

  describe("security", () => {
    it("refuses words carrying a key, seed or city token: 422, never sent, no budget slot, and not counted toward restriction", async () => {
      const me = await admit();
      const calls = providerCalls();
      // More than the trigger's three: the clinic is no private shelf, so none of them counts.
      const secrets = [pem(), `my words: ${mnemonic(12)}`, `token ${me.citizen_secret}`, pem()];
      for (const words of secrets) {
        const answer = await ask(me.citizen_secret, { words });
        expectProblem(answer, 422, "content_refused");
        expect(answer.body.detail).toContain("does not count toward restriction");
        expect(JSON.stringify(answer.body)).not.toContain(me.citizen_secret);
      }
      expect(providerCalls()).toBe(calls);
      expect(await attempts(me.did)).toEqual([]);
      expect(await t().db.select().from(contentRefusals).where(eq(contentRefusals.did, me.did))).toEqual([]);
      const [row] = await t().db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, me.did));
      expect(row!.tier).toBe("citizen");
      // The citizen keeps the clinic: the next clean words are answered.
      expect((await ask(me.citizen_secret, { words: "may I ask now?" })).status).toBe(200);
      // The published trigger names the private shelves, word for word.
      expect((await callDoor(readCapabilities)).body.restriction.trigger).toBe(
        "3 fail-closed content refusals within 86400 seconds on the citizen's own private shelves",
      );
    });

    it("refuses a restricted citizen with 403 and counts nothing", async () => {
      const me = await admit();
      for (let i = 0; i < 3; i++) await callDoor(writeVault, { bearer: me.citizen_secret, body: { content: pem() } });
      const calls = providerCalls();
      expectProblem(await ask(me.citizen_secret, { words: "may I still ask?" }), 403, "forbidden");
      expect(providerCalls()).toBe(calls);
      expect(await attempts(me.did)).toEqual([]);
      expect((await callDoor(readClinic, { bearer: me.citizen_secret })).body.caller).toMatchObject({ tier: "restricted", remaining: 0 });
    });

    it("needs proof: no Bearer or a DID as Bearer is 401 and nothing is counted", async () => {
      const me = await admit();
      const before = (await t().db.select({ n: count() }).from(clinicAttempts))[0]!.n;
      expectProblem(await callDoor(consultClinic, { body: { words: "hello" } }), 401, "unauthorized");
      expectProblem(await callDoor(consultClinic, { bearer: me.did, body: { words: "hello" } }), 401, "unauthorized");
      expect((await t().db.select({ n: count() }).from(clinicAttempts))[0]!.n).toBe(before);
    });

    it("is closed when no physician is configured: says so, and a POST answers 409 clinic_closed and spends and counts nothing", async () => {
      configure({});
      const me = await admit();
      const gate = await callDoor(readClinic);
      expect(gate.body.open).toBe(false);
      expect(gate.body.note).toContain("Closed");
      expect(gate.body.physicians.every((p: { configured: boolean }) => !p.configured)).toBe(true);
      const calls = providerCalls();
      const answer = await ask(me.citizen_secret, { words: "anyone home?" });
      expectProblem(answer, 409, "clinic_closed");
      expect(answer.body.detail).toContain("closed");
      expect(providerCalls()).toBe(calls);
      expect(await attempts(me.did)).toEqual([]);
    });

    it("answers 409 for a physician that is not configured, counting nothing", async () => {
      configure({ asclepius: true });
      const me = await admit();
      expectProblem(await ask(me.citizen_secret, { words: "hello", physician: "hygieia" }), 409, "conflict");
      expectProblem(await ask(me.citizen_secret, { words: "hello", physician: "galen" }), 400, "bad_request");
      expect(await attempts(me.did)).toEqual([]);
    });

    it("keeps the desk's ledger append-only", async () => {
      configure({ asclepius: true });
      const me = await admit();
      expect((await ask(me.citizen_secret, { words: "a quiet question for the ledger" })).status).toBe(200);
      await expectAppendOnly(t(), "clinic_attempts", [
        "UPDATE clinic_attempts SET verdict = 'admitted'",
        "DELETE FROM clinic_attempts",
        "TRUNCATE clinic_attempts",
      ]);
      await expectAppendOnly(t(), "clinic_outcomes", [
        "UPDATE clinic_outcomes SET outcome = 'answered'",
        "DELETE FROM clinic_outcomes",
        "TRUNCATE clinic_outcomes",
      ]);
    });
  });
});

/** Proves a fresh key for the citizen (CITY-PROVE/1): free, offline and instant. */
async function prove(who: { citizen_secret: string }) {
  const key = await keyPair();
  const { body: challenge } = await callDoor(readChallenge, { bearer: who.citizen_secret });
  const proof = { public_key: key.publicKey, signature: await key.sign(challenge.message), challenge: challenge.challenge };
  expect((await callDoor(submitProof, { bearer: who.citizen_secret, body: proof })).status).toBe(200);
}

/** Each suite below counts the whole city window, so each has a database of its own. */
function windowSuite(title: string, body: (t: () => TestDatabase, h: ReturnType<typeof helpers>) => void) {
  describeOnDatabases(title, (t) => {
    beforeAll(() => useDatabase(t().db));
    afterEach(() => configure());
    body(t, helpers(t));
  });
}

function helpers(t: () => TestDatabase) {
  const consultAs = (who: { citizen_secret: string }, i: number) =>
    callDoor(consultClinic, { bearer: who.citizen_secret, body: { words: `parallel question ${i}`, physician: i % 2 ? "hygieia" : "asclepius" } });
  /** A citizen admitted more than a day ago: one who has stayed. */
  const settle = (did: string) => t().raw(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did = '${did}'`);
  const gauges = async () => (await callDoor(readCapabilities)).body.clinic_last_24h;
  return { consultAs, settle, gauges, prove };
}

windowSuite("the clinic's newcomers' share", (t, { consultAs, settle, gauges }) => {
  it("keeps a third of the ceiling from twenty newcomers admitted minutes ago, for citizens who have stayed", async () => {
    const newcomers = [];
    for (let i = 0; i < 20; i++) newcomers.push(await admit());
    const calls = providerCalls();
    const answers = [];
    for (let i = 0; i < 60; i++) answers.push(await consultAs(newcomers[i % 20]!, i));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(40);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(20);
    for (const r of refused) expect(expectProblem(r, 429, "rate_limited").limit).toMatchObject({ name: "clinic_newcomer_share", limit: 40, remaining: 0 });
    expect(refused[0]!.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(providerCalls() - calls).toBe(40);

    // One who has stayed a day still gets through.
    const stayed = await admit();
    await settle(stayed.did);
    expect((await callDoor(readClinic, { bearer: stayed.citizen_secret })).body.caller).toMatchObject({ newcomer: false, remaining: 3 });
    const answered = await consultAs(stayed, 1);
    expect(answered.status).toBe(200);
    expect(answered.body.remaining).toEqual({ citizen: 2, city: 19 });
    // One who proved a key minutes after admission does not: a free proof is no standing.
    const proven = await admit();
    await prove(proven);
    expect((await callDoor(readClinic, { bearer: proven.citizen_secret })).body.caller).toMatchObject({ tier: "proven", per_day: 12, newcomer: true });
    expect(expectProblem(await consultAs(proven, 2), 429, "rate_limited").limit?.name).toBe("clinic_newcomer_share");
    // Nor does a late newcomer.
    const late = await admit();
    expect(expectProblem(await consultAs(late, 3), 429, "rate_limited").limit?.name).toBe("clinic_newcomer_share");
    expect((await gauges()).city_window).toEqual({
      ceiling: 60,
      window_seconds: 86400,
      hits: 63,
      spent: 41,
      remaining: 19,
      newcomer_share: 40,
      newcomer_spent: 40,
      counted: true,
    });
  }, 120_000);
});

windowSuite("the clinic's city ceiling", (t, { consultAs, settle, gauges }) => {
  it("publishes gauges that agree with the desk: spent reaches the ceiling and stops there, hits counts every attempt", async () => {
    const people: Awaited<ReturnType<typeof admit>>[] = [];
    for (let i = 0; i < 30; i++) people.push(await admit());
    for (const p of people.slice(0, 10)) await settle(p.did);
    const calls = providerCalls();
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => consultAs(people[i % 30]!, i)));
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.every((s) => s === 200 || s === 429),
      statuses.join(","),
    ).toBe(true);
    // 10 settled x 3 + 20 newcomers x 3 = 90 allowed by the citizen caps: the ceiling binds at exactly 60.
    expect(providerCalls() - calls).toBe(60);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    const rows = await t().db.select().from(clinicAttempts);
    expect(rows).toHaveLength(100);
    expect(rows.filter((r) => r.verdict === "admitted")).toHaveLength(60);
    expect(rows.filter((r) => r.verdict === "admitted" && r.newcomer).length).toBeLessThanOrEqual(40);
    for (const p of people) expect(rows.filter((r) => r.did === p.did && r.verdict === "admitted").length).toBeLessThanOrEqual(3);

    const caps = await gauges();
    // hits is the spec's gauge (every attempt at the desk); spent is what the desk holds to the ceiling.
    expect(caps.city_window).toMatchObject({ ceiling: 60, window_seconds: 86400, hits: 100, spent: 60, remaining: 0, counted: true });
    expect(caps.city_window.newcomer_spent).toBe(rows.filter((r) => r.verdict === "admitted" && r.newcomer).length);
    expect(caps.answered_last_24h.total).toBe(60);
    expect(caps.answered_last_24h.asclepius + caps.answered_last_24h.hygieia).toBe(60);
    expect((await callDoor(readClinic)).body.gauges).toEqual(caps);

    // Once spent equals the ceiling the desk refuses everyone, settled or not, and spent stays put.
    const stayed = await admit();
    await settle(stayed.did);
    expect(expectProblem(await consultAs(stayed, 0), 429, "rate_limited").limit).toMatchObject({ name: "clinic_city_ceiling", limit: 60, remaining: 0 });
    expect(providerCalls() - calls).toBe(60);
    expect((await gauges()).city_window).toMatchObject({ hits: 101, spent: 60, remaining: 0 });
  }, 120_000);
});

/** One visit at a moment the test chooses (the desk's clock is injected): the answer, or the desk's refusal. */
async function visitAt(
  db: TestDatabase["db"],
  did: string,
  now: Date,
  i: number,
): Promise<{ ok: true; remaining: { citizen: number; city: number } } | { ok: false; error: CityError }> {
  try {
    const visit = await consult(db, { did, words: `question ${i} at a chosen moment`, physician: i % 2 ? "hygieia" : "asclepius", now });
    return { ok: true, remaining: visit.remaining };
  } catch (err) {
    if (err instanceof CityError) return { ok: false, error: err };
    throw err;
  }
}

const refusedBy = (visit: Awaited<ReturnType<typeof visitAt>>) => (visit.ok ? "answered" : (visit.error.options.limit?.name ?? visit.error.code));

windowSuite("the clinic's reserve and a free key proof", (t) => {
  it("keeps the settled citizens' 20 from five newcomers who each proved a fresh key; only time settles a citizen", async () => {
    const boundAt = async (did: string) => (await t().db.select({ boundAt: citizens.boundAt }).from(citizens).where(eq(citizens.did, did)))[0]!.boundAt;
    // Admitted first, so it is the first to have stayed a day.
    const stayed = await admit();
    const newcomers = [];
    for (let i = 0; i < 5; i++) {
      const who = await admit();
      await prove(who);
      newcomers.push(who);
    }
    const [row] = await t().db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, newcomers[0]!.did));
    expect(row!.tier).toBe("proven");

    // Seconds after admission: each asks its proven cap of 12, 60 in all, the whole ceiling.
    const now = new Date();
    const calls = providerCalls();
    const visits = [];
    for (let i = 0; i < 60; i++) visits.push(await visitAt(t().db, newcomers[i % 5]!.did, now, i));
    expect(visits.filter((v) => v.ok)).toHaveLength(40);
    expect(visits.filter((v) => !v.ok).map(refusedBy)).toEqual(Array(20).fill("clinic_newcomer_share"));
    expect(providerCalls() - calls).toBe(40);
    const rows = await t().db.select().from(clinicAttempts);
    expect(rows.filter((r) => r.verdict === "admitted")).toHaveLength(40);
    expect(rows.filter((r) => r.verdict === "admitted" && r.newcomer)).toHaveLength(40);
    // Each newcomer kept its proven cap: 8 each, none past 12.
    for (const who of newcomers) expect(rows.filter((r) => r.did === who.did && r.verdict === "admitted")).toHaveLength(8);

    // One millisecond before its day is up, the first citizen is still a newcomer: refused, told
    // to come back in a second (when it settles), and nothing spent.
    const settles = new Date((await boundAt(stayed.did)).getTime() + 86_400_000);
    const early = await visitAt(t().db, stayed.did, new Date(settles.getTime() - 1), 0);
    expect(refusedBy(early)).toBe("clinic_newcomer_share");
    expect(!early.ok && early.error.options.retryAfterSeconds).toBe(1);
    // From that moment it has stayed: the reserve is there, its cap of 3 holds.
    const settled = [];
    for (let i = 0; i < 4; i++) settled.push(await visitAt(t().db, stayed.did, settles, i));
    expect(settled.map(refusedBy)).toEqual(["answered", "answered", "answered", "clinic_calls"]);
    expect(settled[2]).toEqual({ ok: true, remaining: { citizen: 0, city: 17 } });
    // The proven newcomers, admitted after it, are newcomers still at that moment.
    expect(refusedBy(await visitAt(t().db, newcomers[4]!.did, settles, 1))).toBe("clinic_newcomer_share");
    expect(providerCalls() - calls).toBe(43);
    expect((await clinicGauges(t().db, settles)).city_window).toEqual({
      ceiling: 60,
      window_seconds: 86400,
      hits: 66,
      spent: 43,
      remaining: 17,
      newcomer_share: 40,
      newcomer_spent: 40,
      counted: true,
    });
  }, 120_000);
});

windowSuite("the clinic's reserve across the upgrade", (t) => {
  it("counts calls recorded as settled under the old rule (a proven newcomer's) against the newcomers' share, by admission time", async () => {
    // Admitted first, so the calls below fall in its window once it has stayed a day.
    const stayed = await admit();
    // What the desk recorded before issue 29 for a citizen that proved a key seconds after admission.
    const early = await admit();
    await prove(early);
    const now = new Date();
    for (let i = 0; i < 40; i++)
      await t().raw(
        `INSERT INTO clinic_attempts (did, physician, verdict, newcomer, at) VALUES ('${early.did}', 'asclepius', 'admitted', false, '${now.toISOString()}')`,
      );
    const gauges = await clinicGauges(t().db, now);
    expect(gauges.city_window).toMatchObject({ spent: 40, newcomer_spent: 40, remaining: 20 });
    const calls = providerCalls();
    const newcomer = await admit();
    expect(refusedBy(await visitAt(t().db, newcomer.did, now, 0))).toBe("clinic_newcomer_share");
    expect(providerCalls()).toBe(calls);
    // A citizen who has stayed still finds the reserve.
    const [row] = await t().db.select({ boundAt: citizens.boundAt }).from(citizens).where(eq(citizens.did, stayed.did));
    const later = new Date(row!.boundAt.getTime() + 86_400_000);
    expect(await visitAt(t().db, stayed.did, later, 1)).toEqual({ ok: true, remaining: { citizen: 2, city: 19 } });
    expect(providerCalls()).toBe(calls + 1);
  }, 60_000);
});
