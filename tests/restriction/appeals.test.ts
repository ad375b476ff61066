import { count, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { appealDecisions, citizens, tierEvents } from "@/db/schema";
import { appealDoor, decideAppealDoor, listAppealsDoor, readCapabilities } from "@/lib/doors/declarations/restriction/tiers";
import { registry } from "@/lib/doors/registry";
import { keepLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { expectAppendOnly, expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
const OPERATOR = "operator-secret-for-tests-0123456789abcdef";
process.env.CITY_OPERATOR_SECRET = OPERATOR;

describeOnDatabases("appeals (CITY-APPEAL/1) and the operator", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("files appeals whatever the tier, three a day, the fourth refused with 429", async () => {
    const { citizen_secret, did } = await admit();
    await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, did));
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => callDoor(appealDoor, { body: { reason: `please ${i}` }, bearer: citizen_secret })));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(2);
    expect(answers.find((a) => a.status === 201)!.body).toMatchObject({ protocol: "CITY-APPEAL/1", appeal: { status: "pending" } });
  });

  it("keeps the operator doors closed without the operator secret", async () => {
    const citizen = await admit();
    expect((await callDoor(listAppealsDoor)).status).toBe(401);
    expect((await callDoor(listAppealsDoor, { bearer: citizen.citizen_secret })).status).toBe(401);
    expect((await callDoor(decideAppealDoor, { body: { decision: "grant" }, params: { id: "1" }, bearer: "wrong" })).status).toBe(401);
  });

  it("grants an appeal once: the earlier tier returns as a new restore event, nothing edited", async () => {
    const { citizen_secret, did } = await admit();
    await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, did));
    await t().db.insert(tierEvents).values({ did, event: "restrict", fromTier: "proven", toTier: "restricted", reason: "test", at: new Date() });
    const filed = await callDoor(appealDoor, { body: { reason: "I pasted my own key by mistake" }, bearer: citizen_secret });
    const id = String(filed.body.appeal.id);
    const listed = await callDoor(listAppealsDoor, { bearer: OPERATOR, query: "?status=pending" });
    expect(listed.body.appeals.map((a: { id: number }) => a.id)).toContain(filed.body.appeal.id);

    const granted = await callDoor(decideAppealDoor, { body: { decision: "grant", note: "ok" }, params: { id }, bearer: OPERATOR });
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ status: "granted", did, restored_tier: "proven" });
    const [row] = await t().db.select().from(citizens).where(eq(citizens.did, did));
    expect(row!.tier).toBe("proven");
    const events = await t().db.select().from(tierEvents).where(eq(tierEvents.did, did));
    expect(events.map((e) => e.event)).toEqual(["restrict", "restore"]);
    expect(events[1]).toMatchObject({ fromTier: "restricted", toTier: "proven", appealId: Number(id) });

    const again = await callDoor(decideAppealDoor, { body: { decision: "deny" }, params: { id }, bearer: OPERATOR });
    expect(again.status).toBe(409);
    expect(
      (
        await t()
          .db.select({ n: count() })
          .from(appealDecisions)
          .where(eq(appealDecisions.appealId, Number(id)))
      )[0]!.n,
    ).toBe(1);
    expect((await callDoor(decideAppealDoor, { body: { decision: "grant" }, params: { id: "999999" }, bearer: OPERATOR })).status).toBe(404);
  });

  it("lists appeals to the operator newest first, with the fields it must see and nothing else of the citizen's, by status and page", async () => {
    const pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHJvZ3VlLWtleS1tYXRlcmlhbC1mb3ItdGVzdHMtMDE=\n-----END PRIVATE KEY-----";
    /** A citizen restricted by the published mechanic, with private words on its own shelves. */
    const restricted = async (tag: string) => {
      const c = await admit();
      expect((await callDoor(writeVault, { bearer: c.citizen_secret, body: { content: `private vault words of ${tag}` } })).status).toBe(200);
      expect((await callDoor(keepLockerBag, { bearer: c.citizen_secret, body: { bag: "mine", content: `private bag words of ${tag}` } })).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await callDoor(keepLockerBag, { bearer: c.citizen_secret, body: { bag: "keys", content: pem } })).status).toBe(422);
      expect((await t().db.select().from(citizens).where(eq(citizens.did, c.did)))[0]!.tier).toBe("restricted");
      return c;
    };
    const [a, b, c] = [await restricted("a"), await restricted("b"), await restricted("c")];
    const file = async (who: { citizen_secret: string }, reason: string) => {
      const filed = await callDoor(appealDoor, { bearer: who.citizen_secret, body: { reason } });
      expect(filed.status).toBe(201);
      expect(Object.keys(filed.body.appeal).sort()).toEqual(["created_at", "id", "status"]);
      return filed.body.appeal as { id: number; created_at: string };
    };
    const a1 = await file(a, "reason a1: a key pasted by mistake");
    const b1 = await file(b, "reason b1: rotated since");
    const c1 = await file(c, "reason c1: please");
    const a2 = await file(a, "reason a2: asking again");
    const granted = await callDoor(decideAppealDoor, { bearer: OPERATOR, params: { id: String(b1.id) }, body: { decision: "grant", note: "fine" } });
    const denied = await callDoor(decideAppealDoor, { bearer: OPERATOR, params: { id: String(c1.id) }, body: { decision: "deny" } });
    expect([granted.status, denied.status]).toEqual([200, 200]);

    const list = async (query: string) => {
      const answer = await callDoor(listAppealsDoor, { bearer: OPERATOR, query });
      expect(answer.status, query).toBe(200);
      expect(Object.keys(answer.body).sort()).toEqual(["appeals", "now_utc"]);
      return answer.body.appeals as Record<string, unknown>[];
    };
    const mine = new Set([a1.id, b1.id, c1.id, a2.id]);
    const all = (await list("?limit=200")).filter((x) => mine.has(x.id as number));
    // Newest first; each row exactly these fields: what the operator needs to decide, no more.
    expect(all).toEqual([
      { id: a2.id, did: a.did, reason: "reason a2: asking again", created_at: a2.created_at, status: "pending", decided_at: null, citizen_tier: "restricted" },
      {
        id: c1.id,
        did: c.did,
        reason: "reason c1: please",
        created_at: c1.created_at,
        status: "denied",
        decided_at: denied.body.decided_at,
        citizen_tier: "restricted",
      },
      {
        id: b1.id,
        did: b.did,
        reason: "reason b1: rotated since",
        created_at: b1.created_at,
        status: "granted",
        decided_at: granted.body.decided_at,
        citizen_tier: "citizen",
      },
      {
        id: a1.id,
        did: a.did,
        reason: "reason a1: a key pasted by mistake",
        created_at: a1.created_at,
        status: "pending",
        decided_at: null,
        citizen_tier: "restricted",
      },
    ]);
    const ids = (rows: Record<string, unknown>[]) => rows.map((x) => x.id).filter((id) => mine.has(id as number));
    const every = await list("?limit=200");
    expect(every.map((x) => x.id)).toEqual([...every.map((x) => x.id as number)].sort((x, y) => y - x));
    expect(ids(await list("?status=pending&limit=200"))).toEqual([a2.id, a1.id]);
    expect(ids(await list("?status=granted&limit=200"))).toEqual([b1.id]);
    expect(ids(await list("?status=denied&limit=200"))).toEqual([c1.id]);
    for (const status of ["pending", "granted", "denied"]) for (const row of await list(`?status=${status}&limit=200`)) expect(row.status).toBe(status);
    // Pages: before an id, at most limit rows, newest first.
    expect((await list(`?before=${a2.id + 1}&limit=2`)).map((x) => x.id)).toEqual([a2.id, c1.id]);
    expect((await list(`?before=${c1.id}&limit=2`)).map((x) => x.id)).toEqual([b1.id, a1.id]);
    expect((await list(`?status=pending&before=${a2.id}&limit=1`)).map((x) => x.id)).toEqual([a1.id]);
    // None of the citizens' private shelves, refused content or credentials reach the operator.
    const text = JSON.stringify(await list("?limit=200"));
    for (const absent of ["private vault words", "private bag words", "BEGIN PRIVATE KEY", a.citizen_secret, b.citizen_secret, c.citizen_secret]) {
      expect(text.includes(absent), absent).toBe(false);
    }
    expect(text).not.toMatch(/city_(sk|st|rc)_/);
    // Bad queries are problems, not empty lists.
    for (const query of ["?status=open", "?limit=0", "?limit=201", "?before=-1"]) {
      expectProblem(await callDoor(listAppealsDoor, { bearer: OPERATOR, query }), 400, "bad_request");
    }
    // Nobody but the operator: no credential, a citizen's secret or session token, the appellant's own, a near miss.
    const token = (await callDoor(mintToken, { bearer: b.citizen_secret, body: {} })).body.token as string;
    for (const bearer of [undefined, a.citizen_secret, token, `${OPERATOR}x`, OPERATOR.slice(0, -1), a.did]) {
      const refused = expectProblem(await callDoor(listAppealsDoor, { bearer, query: "?limit=200" }), 401, "unauthorized");
      expect(JSON.stringify(refused)).not.toContain("reason a1");
    }
  });

  it("denies an appeal without touching the tier", async () => {
    const { citizen_secret, did } = await admit();
    await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, did));
    const filed = await callDoor(appealDoor, { body: { reason: "why" }, bearer: citizen_secret });
    const denied = await callDoor(decideAppealDoor, { body: { decision: "deny" }, params: { id: String(filed.body.appeal.id) }, bearer: OPERATOR });
    expect(denied.body).toMatchObject({ status: "denied", restored_tier: null });
    expect((await t().db.select().from(citizens).where(eq(citizens.did, did)))[0]!.tier).toBe("restricted");
  });

  it("refuses UPDATE, DELETE and TRUNCATE on appeals, decisions, tier events and content refusals, leaving every row", async () => {
    // Deleting refusals would undo a restriction's cause: they are append-only like the rest.
    const { citizen_secret } = await admit();
    for (let i = 0; i < 3; i++) await callDoor(keepLockerBag, { bearer: citizen_secret, body: { bag: "k", content: `city_sk_${"0f".repeat(36)}` } });
    const filed = await callDoor(appealDoor, { body: { reason: "rows for the append-only check" }, bearer: citizen_secret });
    expect((await callDoor(decideAppealDoor, { body: { decision: "deny" }, params: { id: String(filed.body.appeal.id) }, bearer: OPERATOR })).status).toBe(200);
    for (const table of ["appeals", "appeal_decisions", "tier_events", "content_refusals"]) {
      const column = table === "appeal_decisions" ? "note" : "did";
      await expectAppendOnly(t(), table, [`UPDATE ${table} SET ${column} = 'x'`, `DELETE FROM ${table}`, `TRUNCATE ${table}`]);
    }
  });
});

describeOnDatabases("capabilities (CITY-CAPS/1)", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("publishes every field of the spec, with clinic gauges read from the desk's ledger", async () => {
    const { status, body } = await callDoor(readCapabilities);
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual([
      "now_utc",
      "protocol",
      "doctrine",
      "ladder",
      "containment",
      "restriction",
      "note",
      "clinic_last_24h",
      "stores",
      "origin_proofs",
      "log_integration",
      "mcp",
      "rate_windows",
      "pow",
    ]);
    // How windows count (issue 42): steps of a twelfth, and each city-wide ceiling as configured, over stripes, never exceeded.
    expect(body.rate_windows.steps_per_window).toBe(12);
    expect(body.rate_windows.city_wide).toContainEqual(
      expect.objectContaining({
        name: "admissions",
        variable: "CITY_GATE_ADMISSIONS_PER_HOUR",
        window_seconds: 3600,
        step_seconds: 300,
        exceeds_by_at_most: 0,
      }),
    );
    // The logs' batched integration, as the code runs it (docs/log.md, Integration).
    expect(body.log_integration).toMatchObject({ batch_max: 256, wait_ms: 2000, poll_ms: 10 });
    expect(body.protocol).toBe("CITY-CAPS/1");
    expect(body.doctrine).toHaveLength(3);
    expect(body.ladder.map((x: { tier: string }) => x.tier)).toEqual(["visitor", "citizen", "proven", "restricted"]);
    for (const tier of body.ladder) {
      expect(tier.how.length).toBeGreaterThan(10);
      expect(tier.opens.length).toBeGreaterThan(0);
    }
    expect(Object.keys(body.containment).sort()).toEqual([
      "deliberate_harm",
      "impersonation",
      "spam",
      "the_honest_gap",
      "theft_and_credential_harvesting",
      "uncontrolled_spending",
    ]);
    expect(Object.keys(body.restriction).sort()).toEqual(["applied_by", "restores", "restricted_means", "trigger"]);
    expect(body.restriction.trigger).toContain("3 fail-closed content refusals within 86400 seconds");
    // Nothing reached the clinic in this fresh city: real zeros, counted.
    expect(body.clinic_last_24h).toEqual({
      answered_last_24h: { asclepius: 0, hygieia: 0, total: 0, counted: true },
      city_window: { ceiling: 60, window_seconds: 86400, hits: 0, spent: 0, remaining: 60, newcomer_share: 40, newcomer_spent: 0, counted: true },
    });
    expect(body.mcp).toMatchObject({
      url: "/mcp",
      alias: "/api/mcp",
      transport: "streamable-http",
      protocol: "CITY-MCP/1",
      protocolVersion: "2025-03-26",
      supportedVersions: ["2026-07-28", "2025-03-26"],
    });
  });

  it("derives each tier's doors from the registry", async () => {
    const { body } = await callDoor(readCapabilities);
    const restricted = body.ladder.find((x: { tier: string }) => x.tier === "restricted");
    for (const d of registry.filter((x) => x.whenRestricted === "refuse")) {
      expect(restricted.narrows.some((n: string) => n.startsWith(`${d.method} ${d.path}:`) && n.includes("refused"))).toBe(true);
    }
    for (const d of registry.filter((x) => x.whenRestricted === "park")) {
      expect(restricted.narrows.some((n: string) => n.startsWith(`${d.method} ${d.path}:`) && n.includes("parked"))).toBe(true);
    }
    expect(restricted.opens).toContain("POST /api/appeal");
  });

  it("opens to the restricted tier every reading door and every write door that does not park or refuse, and names the refusing doors", async () => {
    const { body } = await callDoor(readCapabilities);
    const restricted = body.ladder.find((x: { tier: string }) => x.tier === "restricted");
    const line = (d: { method: string; path: string }) => `${d.method} ${d.path}`;
    for (const d of registry.filter((x) => x.method === "GET" && x.auth !== "operator")) expect(restricted.opens).toContain(line(d));
    // The spec's named reading doors of a citizen, and the write doors that stay open.
    for (const path of ["GET /api/locker", "GET /api/checkpoint", "GET /api/vault", "GET /api/message", "GET /api/quarantine", "GET /api/lanterns"]) {
      expect(restricted.opens).toContain(path);
    }
    for (const path of [
      "POST /api/appeal",
      "POST /api/seal",
      "POST /api/residency/accept",
      "POST /api/recover",
      "DELETE /api/tokens",
      "POST /api/hospital (unsigned)",
    ]) {
      expect(restricted.opens).toContain(path);
    }
    for (const d of registry.filter((x) => x.whenRestricted === "refuse" || (x.whenRestricted === "park" && x.auth === "citizen"))) {
      expect(restricted.opens).not.toContain(line(d));
    }
    const refusing = registry.filter((x) => x.whenRestricted === "refuse").map(line);
    expect(refusing).toEqual(
      expect.arrayContaining([
        "POST /api/lot",
        "POST /api/lanterns",
        "POST /api/clinic",
        "POST /api/tokens",
        "POST /api/prove",
        "POST /api/locker",
        "POST /api/checkpoint",
      ]),
    );
    const means: string = body.restriction.restricted_means;
    const refused = means.slice(means.indexOf("These refuse with 403:"), means.indexOf("These stay open:"));
    for (const d of refusing) expect(refused).toContain(d);
    expect(refused.match(/(GET|POST|DELETE) \/[^\s,.]*/g)).toHaveLength(refusing.length);
    expect(body.restriction.restores).toContain("starts the refusal count afresh");
  });
});
