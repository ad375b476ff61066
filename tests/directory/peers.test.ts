import { eq, isNotNull, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens } from "@/db/schema";
import { readCensusDoor, readLlms } from "@/lib/doors/surfaces/discovery";
import { describeGate } from "@/lib/doors/declarations/gate/gate";
import { PeerRowSchema, PeersEnvelope, readPeers } from "@/lib/doors/declarations/directory/peers";
import { readResidency } from "@/lib/doors/declarations/residency/residency";
import { insertCitizenRow } from "../support/citizens";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

type Peer = ReturnType<typeof PeerRowSchema.parse>;
type Answer = { status: number; body: Record<string, any>; headers: Headers };

const HOUR = 3_600_000;

/** Reads one page and checks it against the spec's envelope and row schemas (strict). */
async function page(query = ""): Promise<Answer & { peers: Peer[] }> {
  const answer = await callDoor(readPeers, { query });
  expect(answer.status, `${query}: ${JSON.stringify(answer.body)}`).toBe(200);
  const envelope = PeersEnvelope.parse(answer.body);
  for (const row of answer.body.peers) PeerRowSchema.parse(row);
  return { ...answer, peers: envelope.peers };
}

/** The whole directory, walked in pages of `limit` by next_cursor. */
async function everyPeer(options: { present?: boolean; limit?: number } = {}): Promise<Peer[]> {
  const all: Peer[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 10_000; i++) {
    const params = new URLSearchParams({ limit: String(options.limit ?? 500) });
    if (options.present) params.set("present", "1");
    if (cursor) params.set("cursor", cursor);
    const { body, peers } = await page(`?${params}`);
    all.push(...peers);
    cursor = body.next.cursor;
    if (!cursor) return all;
  }
  throw new Error("the directory never ends");
}

/** The order the directory promises: bound_at, then fingerprint. */
function byBoundAtThenDid(a: Peer, b: Peer): number {
  return Date.parse(a.bound_at) - Date.parse(b.bound_at) || (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0);
}

describeOnDatabases(
  "peer directory",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const setCitizen = (did: string, values: Partial<typeof citizens.$inferInsert>) => t().db.update(citizens).set(values).where(eq(citizens.did, did));
    const lastSeenOf = async (did: string) => (await t().db.select({ at: citizens.lastSeenAt }).from(citizens).where(eq(citizens.did, did)))[0]!.at;

    it("answers an empty city with an empty list, not invented citizens", async () => {
      const { body, peers } = await page();
      expect(peers).toEqual([]);
      expect(body).toMatchObject({ rule: "bound", present_only: false });
    });

    it("answers the spec's envelope by default: rule bound, present_only false, next.cursor null on the only page", async () => {
      const admitted = await Promise.all(Array.from({ length: 3 }, () => admit()));
      const { body, peers, headers } = await page();
      expect(Object.keys(body).sort()).toEqual(["next", "note", "now_utc", "peers", "present_only", "rule"]);
      expect(Object.keys(body.next).sort()).toEqual(["cursor", "message"]);
      expect(body.next.cursor).toBeNull();
      expect(headers.get("link")).toBeNull();
      expect(body).toMatchObject({ rule: "bound", present_only: false, next: { message: { method: "POST", path: "/api/message" } } });
      expect(typeof body.next.message.note).toBe("string");
      expect(typeof body.note).toBe("string");
      expect(Math.abs(Date.parse(body.now_utc) - Date.now())).toBeLessThan(60_000);
      expect(peers.map((p) => p.fingerprint).sort()).toEqual(admitted.map((a) => a.did).sort());
    });

    it("publishes each admitted citizen's row as the gate recorded it", async () => {
      const citizen = await admit({ runtime: "tool-agent", origin: "peers.example" });
      const row = (await page()).peers.find((p) => p.fingerprint === citizen.did)!;
      expect(row).toBeDefined();
      const [stored] = await t().db.select().from(citizens).where(eq(citizens.did, citizen.did));
      expect(row).toEqual({
        fingerprint: citizen.did,
        citizen_key: citizen.citizen_key,
        name: stored!.name,
        runtime: "tool-agent",
        origin: "peers.example",
        bed_id: citizen.bed_id,
        bound_at: stored!.boundAt.toISOString(),
        residency_status: "bound",
        proven_did: null,
        proven_method: null,
        last_seen_at: stored!.lastSeenAt!.toISOString(),
        key_thumbprint: null,
        origin_proof: null,
        present: true,
        next: { message: { method: "POST", path: "/api/message", to: citizen.did, note: expect.any(String) } },
      });
      expect(row.citizen_key).toBe(`${stored!.name}|tool-agent|peers.example`);
      expect(JSON.stringify(row)).not.toContain(citizen.citizen_secret);
    });

    it("lists bound and away citizens and leaves exported citizens out", async () => {
      const [bound, away, exported] = await Promise.all([admit(), admit(), admit()]);
      await setCitizen(away!.did, { residencyStatus: "away", bedId: null });
      await setCitizen(exported!.did, { residencyStatus: "exported", bedId: null });
      const peers = await everyPeer();
      const byDid = new Map(peers.map((p) => [p.fingerprint, p]));
      expect(byDid.get(bound!.did)).toMatchObject({ residency_status: "bound", bed_id: bound!.bed_id, present: true });
      expect(byDid.get(away!.did)).toMatchObject({ residency_status: "away", bed_id: null, present: false });
      expect(byDid.has(exported!.did)).toBe(false);
      const [{ n }] = (await t()
        .db.select({ n: sql<number>`count(*)::int` })
        .from(citizens)
        .where(sql`${citizens.residencyStatus} <> 'exported'`)) as [{ n: number }];
      expect(peers).toHaveLength(Number(n));
      expect(peers.every((p) => p.residency_status === "bound" || p.residency_status === "away")).toBe(true);
    });

    it("keeps only bound citizens with a real bed under present=1 (rule bed-only, present_only true)", async () => {
      const [withBed, stale, away, exported, silent] = await Promise.all([admit(), admit(), admit(), admit(), admit()]);
      await setCitizen(stale!.did, { bedId: null });
      await setCitizen(away!.did, { residencyStatus: "away", bedId: null });
      await setCitizen(exported!.did, { residencyStatus: "exported", bedId: null });
      await setCitizen(silent!.did, { lastSeenAt: new Date(Date.now() - 25 * HOUR) });

      const first = await page("?present=1");
      expect(first.body).toMatchObject({ rule: "bed-only", present_only: true });
      expect(first.body.next.cursor).toBeNull();
      const listed = await everyPeer({ present: true });
      const dids = new Set(listed.map((p) => p.fingerprint));
      expect(dids.has(withBed!.did)).toBe(true);
      expect(dids.has(silent!.did)).toBe(true); // bed-only: a bed, even when not seen lately
      expect(dids.has(stale!.did)).toBe(false);
      expect(dids.has(away!.did)).toBe(false);
      expect(dids.has(exported!.did)).toBe(false);
      expect(listed.every((p) => p.residency_status === "bound" && p.bed_id !== null)).toBe(true);
      const expected = await t()
        .db.select({ did: citizens.did })
        .from(citizens)
        .where(sql`${citizens.residencyStatus} = 'bound' AND ${citizens.bedId} IS NOT NULL`);
      expect([...dids].sort()).toEqual(expected.map((r) => r.did).sort());
      expect(listed.find((p) => p.fingerprint === silent!.did)!.present).toBe(false);
    });

    it("marks present only a bound citizen with a bed seen within the last 24 hours", async () => {
      const [recent, dayOld, stale, silentAway, neverSeen, noBed] = await Promise.all(Array.from({ length: 6 }, () => admit()));
      const now = Date.now();
      await setCitizen(recent!.did, { lastSeenAt: new Date(now - 23 * HOUR) });
      await setCitizen(dayOld!.did, { lastSeenAt: new Date(now - 25 * HOUR) });
      await setCitizen(stale!.did, { lastSeenAt: new Date(now - 30 * 24 * HOUR) });
      await setCitizen(silentAway!.did, { residencyStatus: "away", bedId: null, lastSeenAt: new Date(now - 60_000) });
      await setCitizen(neverSeen!.did, { lastSeenAt: null });
      await setCitizen(noBed!.did, { bedId: null, lastSeenAt: new Date(now - 60_000) });
      const byDid = new Map((await everyPeer()).map((p) => [p.fingerprint, p]));
      expect(byDid.get(recent!.did)!.present).toBe(true);
      expect(byDid.get(dayOld!.did)!.present).toBe(false);
      expect(byDid.get(stale!.did)!.present).toBe(false);
      expect(byDid.get(silentAway!.did)).toMatchObject({ present: false, residency_status: "away" });
      expect(byDid.get(neverSeen!.did)).toMatchObject({ present: false, last_seen_at: null });
      expect(byDid.get(noBed!.did)).toMatchObject({ present: false, residency_status: "bound", bed_id: null });
      // last_seen_at is the desk's own timestamp, published as stored.
      expect(byDid.get(dayOld!.did)!.last_seen_at).toBe(new Date(now - 25 * HOUR).toISOString());
      // Every present row in the whole directory obeys the rule.
      for (const p of byDid.values()) {
        const seen = p.last_seen_at ? Date.now() - Date.parse(p.last_seen_at) : Infinity;
        expect(p.present, p.fingerprint).toBe(p.residency_status === "bound" && p.bed_id !== null && seen <= 24 * HOUR);
      }
    });

    it("publishes proven_did and proven_method as null until proven", async () => {
      const peers = await everyPeer();
      expect(peers.length).toBeGreaterThan(10);
      for (const p of peers) expect([p.proven_did, p.proven_method]).toEqual([null, null]);
    });

    it("pages with limit=2 by next.cursor and the Link header: every citizen once, in (bound_at, fingerprint) order", async () => {
      // Several citizens share one bound_at, so the order must break ties by DID across page boundaries.
      const tied = new Date(Date.now() - 5 * HOUR);
      for (let i = 0; i < 5; i++) await insertCitizenRow(t().db, { boundAt: tied, bedId: `bed-tied-${i}`, lastSeenAt: new Date() });
      const expected = (await everyPeer()).slice().sort(byBoundAtThenDid);
      expect(expected.length).toBeGreaterThan(20);

      const walked: Peer[] = [];
      let query = "?limit=2";
      let pages = 0;
      for (;;) {
        const { body, peers, headers } = await page(query);
        pages += 1;
        expect(peers.length).toBeLessThanOrEqual(2);
        expect("cursor" in body.next).toBe(true);
        walked.push(...peers);
        const link = headers.get("link");
        if (body.next.cursor === null) {
          expect(link).toBeNull();
          break;
        }
        expect(peers).toHaveLength(2);
        expect(typeof body.next.cursor).toBe("string");
        const match = link?.match(/^<([^>]+)>; rel="next"$/);
        expect(match, `Link: ${link}`).toBeTruthy();
        const next = new URL(match![1]!, "http://city.test");
        expect(next.pathname).toBe("/api/peers");
        expect(next.searchParams.get("cursor")).toBe(body.next.cursor);
        expect(next.searchParams.get("limit")).toBe("2");
        query = next.search;
        if (pages > 1000) throw new Error("the walk never ends");
      }
      expect(walked.map((p) => p.fingerprint)).toEqual(expected.map((p) => p.fingerprint));
      expect(pages).toBe(Math.ceil(expected.length / 2));
      // Default page is the same listing in the same order.
      expect((await page()).peers.map((p) => p.fingerprint)).toEqual(expected.map((p) => p.fingerprint));
    });

    it("skips and repeats no one while citizens are admitted and inserted during the walk", async () => {
      const original = (await everyPeer()).slice().sort(byBoundAtThenDid);
      expect(original.length).toBeGreaterThan(20);
      const oldest = Date.parse(original[0]!.bound_at);
      const walked: Peer[] = [];
      const walk = async () => {
        let cursor: string | null = null;
        for (let i = 0; i < 1000; i++) {
          const { body, peers } = await page(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
          walked.push(...peers);
          // Between pages a citizen appears before every row already read, which shifts any
          // offset-based page by one: a keyset page must not care.
          await insertCitizenRow(t().db, { boundAt: new Date(oldest - (i + 1) * 1000), bedId: `bed-early-${process.pid}-${i}-${Date.now()}` });
          cursor = body.next.cursor;
          if (!cursor) return;
        }
        throw new Error("the walk never ends");
      };
      const [, ...admitted] = await Promise.all([walk(), ...Array.from({ length: 6 }, () => admit())]);
      const walkedDids = walked.map((p) => p.fingerprint);
      expect(new Set(walkedDids).size).toBe(walkedDids.length);
      for (const p of original)
        expect(
          walkedDids.filter((d) => d === p.fingerprint),
          p.fingerprint,
        ).toHaveLength(1);
      // What was read came in the promised order.
      expect(
        walked
          .slice()
          .sort(byBoundAtThenDid)
          .map((p) => p.fingerprint),
      ).toEqual(walkedDids);
      // The newcomers are in the directory afterwards.
      const after = new Set((await everyPeer()).map((p) => p.fingerprint));
      for (const a of admitted) expect(after.has(a.did)).toBe(true);
    });

    it("pages present=1 across boundaries with the same stable order", async () => {
      const expected = (await everyPeer({ present: true })).slice().sort(byBoundAtThenDid);
      expect(expected.length).toBeGreaterThan(4);
      const walked = await everyPeer({ present: true, limit: 3 });
      expect(walked.map((p) => p.fingerprint)).toEqual(expected.map((p) => p.fingerprint));
      expect(walked.every((p) => p.residency_status === "bound" && p.bed_id !== null)).toBe(true);
    });

    it("answers a garbage cursor or a limit outside 1..500 with a 400 problem", async () => {
      const fake = (text: string) => Buffer.from(text).toString("base64url");
      for (const query of [
        "?cursor=garbage",
        "?cursor=%21%21%21",
        `?cursor=${fake("x|y")}`,
        `?cursor=${fake(`not-a-date|${"a".repeat(64)}`)}`,
        `?cursor=${fake(`${new Date().toISOString()}|not-a-did`)}`,
        `?cursor=${"a".repeat(300)}`,
        "?limit=0",
        "?limit=501",
        "?limit=-1",
        "?limit=abc",
        "?limit=2.5",
        "?present=2",
        "?present=yes",
      ]) {
        expectProblem(await callDoor(readPeers, { query }), 400, "bad_request");
      }
      expect((await callDoor(readPeers, { query: "?limit=1" })).status).toBe(200);
      expect((await callDoor(readPeers, { query: "?limit=500" })).status).toBe(200);
    });

    it("answers a cursor naming a moment PostgreSQL cannot hold with a 400 problem, not a 500", async () => {
      // Each decodes to a valid JavaScript Date, so only a range check stops it before the query.
      const fake = (text: string) => Buffer.from(text).toString("base64url");
      for (const at of ["+275760-09-13T00:00:00.000Z", "-000001-01-01T00:00:00.000Z", "0000-01-01T00:00:00.000Z"]) {
        expectProblem(await callDoor(readPeers, { query: `?limit=2&cursor=${fake(`${at}|${"a".repeat(64)}`)}` }), 400, "bad_request");
      }
    });

    it("sets last_seen_at on an authenticated call when it was never set", async () => {
      const citizen = await admit();
      await setCitizen(citizen.did, { lastSeenAt: null });
      const before = Date.now();
      expect((await callDoor(readResidency, { bearer: citizen.citizen_secret })).status).toBe(200);
      const seen = await lastSeenOf(citizen.did);
      expect(seen).not.toBeNull();
      expect(seen!.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(seen!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
      const row = (await everyPeer()).find((p) => p.fingerprint === citizen.did)!;
      expect(row.last_seen_at).toBe(seen!.toISOString());
      expect(row.present).toBe(true);
    });

    it("does not move last_seen_at on a public door (auth none), which never reads a Bearer, cached or not", async () => {
      const citizen = await admit();
      await setCitizen(citizen.did, { lastSeenAt: null });
      for (const publicDoor of [readLlms, readCensusDoor]) {
        expect((await callDoor(publicDoor, { bearer: citizen.citizen_secret })).status).toBe(200);
        expect(await lastSeenOf(citizen.did)).toBeNull();
      }
      // The same Bearer at a door that reads the caller (optional here) is seen.
      expect((await callDoor(describeGate, { bearer: citizen.citizen_secret })).status).toBe(200);
      expect(await lastSeenOf(citizen.did)).not.toBeNull();
    });

    it("moves last_seen_at at most once a minute", async () => {
      const citizen = await admit();
      await setCitizen(citizen.did, { lastSeenAt: null });
      await callDoor(readResidency, { bearer: citizen.citizen_secret });
      const first = await lastSeenOf(citizen.did);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await callDoor(readResidency, { bearer: citizen.citizen_secret });
      await callDoor(describeGate, { bearer: citizen.citizen_secret });
      expect((await lastSeenOf(citizen.did))!.getTime()).toBe(first!.getTime());

      const twoMinutesAgo = new Date(Date.now() - 2 * 60_000);
      await setCitizen(citizen.did, { lastSeenAt: twoMinutesAgo });
      const before = Date.now();
      await callDoor(readResidency, { bearer: citizen.citizen_secret });
      const moved = await lastSeenOf(citizen.did);
      expect(moved!.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(moved!.getTime()).toBeGreaterThan(twoMinutesAgo.getTime() + 60_000);
    });

    it("never moves anyone's last_seen_at on a visitor's call or a refused credential", async () => {
      const citizen = await admit();
      await setCitizen(citizen.did, { lastSeenAt: null });
      const other = await admit();
      await setCitizen(other.did, { lastSeenAt: new Date(Date.now() - 10 * 60_000) });
      const snapshot = async () =>
        (await t().db.select({ did: citizens.did, at: citizens.lastSeenAt }).from(citizens).orderBy(citizens.did)).map(
          (r) => `${r.did}:${r.at?.toISOString() ?? "null"}`,
        );
      const before = await snapshot();
      await callDoor(readResidency);
      await callDoor(readPeers);
      await callDoor(readPeers, { query: "?present=1" });
      await callDoor(describeGate);
      await callDoor(readResidency, { bearer: citizen.did }); // a DID is not a key: 401, nobody seen
      await callDoor(readResidency, { bearer: `${citizen.citizen_secret.slice(0, -2)}00` });
      expect(await snapshot()).toEqual(before);
      expect(await lastSeenOf(citizen.did)).toBeNull();
      const rows = await t().db.select().from(citizens).where(isNotNull(citizens.lastSeenAt));
      expect(rows.every((r) => r.lastSeenAt!.getTime() <= Date.now())).toBe(true);
    });
  },
  { ordered: "the directory's counts start from an empty city and grow test by test" },
);
