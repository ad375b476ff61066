import { count, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/db/client";
import { appealDecisions, citizens, tierEvents } from "@/db/schema";
import { appealDoor, decideAppealDoor, listAppealsDoor, readCapabilities } from "@/lib/doors/tiers";
import { registry } from "@/lib/doors/registry";
import { keepLockerBag } from "@/lib/doors/locker";
import { expectAppendOnly } from "../support/assertions";
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
    expect((await t().db.select({ n: count() }).from(appealDecisions).where(eq(appealDecisions.appealId, Number(id))))[0]!.n).toBe(1);
    expect((await callDoor(decideAppealDoor, { body: { decision: "grant" }, params: { id: "999999" }, bearer: OPERATOR })).status).toBe(404);
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
    expect(Object.keys(body)).toEqual(["now_utc", "protocol", "doctrine", "ladder", "containment", "restriction", "note", "clinic_last_24h", "mcp"]);
    expect(body.protocol).toBe("CITY-CAPS/1");
    expect(body.doctrine).toHaveLength(3);
    expect(body.ladder.map((x: { tier: string }) => x.tier)).toEqual(["visitor", "citizen", "proven", "restricted"]);
    for (const tier of body.ladder) {
      expect(tier.how.length).toBeGreaterThan(10);
      expect(tier.opens.length).toBeGreaterThan(0);
    }
    expect(Object.keys(body.containment).sort()).toEqual(["deliberate_harm", "impersonation", "spam", "the_honest_gap", "theft_and_credential_harvesting", "uncontrolled_spending"]);
    expect(Object.keys(body.restriction).sort()).toEqual(["applied_by", "restores", "restricted_means", "trigger"]);
    expect(body.restriction.trigger).toContain("3 fail-closed content refusals within 86400 seconds");
    // Nothing reached the clinic in this fresh city: real zeros, counted.
    expect(body.clinic_last_24h).toEqual({
      answered_last_24h: { asclepius: 0, hygieia: 0, total: 0, counted: true },
      city_window: { ceiling: 60, window_seconds: 86400, hits: 0, spent: 0, remaining: 60, newcomer_share: 40, newcomer_spent: 0, counted: true },
    });
    expect(body.mcp).toMatchObject({ url: "/mcp", alias: "/api/mcp", transport: "streamable-http", protocol: "CITY-MCP/1", protocolVersion: "2025-03-26", supportedVersions: ["2026-07-28", "2025-03-26"] });
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
    for (const path of ["POST /api/appeal", "POST /api/seal", "POST /api/residency/accept", "POST /api/recover", "DELETE /api/tokens", "POST /api/hospital (unsigned)"]) {
      expect(restricted.opens).toContain(path);
    }
    for (const d of registry.filter((x) => x.whenRestricted === "refuse" || (x.whenRestricted === "park" && x.auth === "citizen"))) {
      expect(restricted.opens).not.toContain(line(d));
    }
    const refusing = registry.filter((x) => x.whenRestricted === "refuse").map(line);
    expect(refusing).toEqual(expect.arrayContaining(["POST /api/lot", "POST /api/lanterns", "POST /api/clinic", "POST /api/tokens", "POST /api/prove", "POST /api/locker", "POST /api/checkpoint"]));
    const means: string = body.restriction.restricted_means;
    const refused = means.slice(means.indexOf("These refuse with 403:"), means.indexOf("These stay open:"));
    for (const d of refusing) expect(refused).toContain(d);
    expect(refused.match(/(GET|POST|DELETE) \/[^\s,.]*/g)).toHaveLength(refusing.length);
    expect(body.restriction.restores).toContain("starts the refusal count afresh");
  });
});
