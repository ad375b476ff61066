import { randomBytes } from "node:crypto";
import { desc, eq, max } from "drizzle-orm";
import { beforeAll, expect, it, vi } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { citizens, residencyLog, wardNotes } from "@/db/schema";
import { canonicalJson, sha256Hex } from "@/lib/city/canonical";
import { appendNow } from "@/lib/city/logs/residency-log";
import { readVersions, VERSION_SCOPES } from "@/lib/city/versions";
import { markSeen } from "@/lib/doors/pipeline/caller";
import { readBeacon, readCensusDoor } from "@/lib/doors/surfaces/discovery";
import type { AnyDoor } from "@/lib/doors/door";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { exportResidency, readResidency } from "@/lib/doors/declarations/residency/residency";
import { readResidencyLog } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { readAndFileWard, readWard } from "@/lib/doors/declarations/ward/ward";
import { insertCitizenRow } from "../support/citizens";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";

vi.hoisted(() => {
  // Round trips are counted by the driver hook (db/query-count.ts), set when the database opens.
  process.env.CITY_COUNT_QUERIES = "1";
  process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
  process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
});

const DAY_MS = 86_400_000;

async function read(door: AnyDoor, query = "", headers: Record<string, string> = {}, path = door.path) {
  const response = await serveDoor(door, new Request(`http://city.test${path}${query}`, { headers }));
  const text = await response.text();
  return {
    status: response.status,
    etag: response.headers.get("etag"),
    queries: Number(response.headers.get("x-city-queries")),
    body: (text ? JSON.parse(text) : null) as Record<string, any>,
  };
}

/** Reads twice: the second answer must come from memory (one round trip: the version read). */
async function held(door: AnyDoor, query = "") {
  await read(door, query);
  const answer = await read(door, query);
  expect(answer.queries, `${door.name}${query} from memory`).toBe(1);
  return answer.body;
}

/** The read after a write: rebuilt (the version moved), so more than the version read. */
async function rebuilt(door: AnyDoor, query = "") {
  const answer = await read(door, query);
  expect(answer.status).toBe(200);
  expect(answer.queries, `${door.name}${query} rebuilt after a write`).toBeGreaterThan(1);
  return answer.body;
}

const ALL = "?limit=500";
const freshIp = () => `203.0.113.${Math.floor(Math.random() * 250) + 1}`;

describeOnDatabases(
  "versioned reads",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    const versions = () => readVersions(t().db, VERSION_SCOPES);
    const lastSeq = async () =>
      (
        await t()
          .db.select({ seq: max(residencyLog.seq) })
          .from(residencyLog)
      )[0]?.seq ?? 0;
    const peerOf = (body: Record<string, any>, did: string) =>
      (body.peers as { fingerprint: string }[]).find((p) => p.fingerprint === did) as Record<string, any> | undefined;

    it("has the version triggers on every table the cached doors read", async () => {
      const rows = rowsOf<{ relname: string; tgname: string }>(
        await t().raw(`SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname LIKE '%\\_version\\_%' ORDER BY 1, 2`),
      );
      for (const table of ["citizens", "residency_log", "ward_notes"]) {
        expect(rows.filter((r) => r.relname === table).map((r) => r.tgname)).toEqual(
          ["delete", "insert", "truncate", "update"].map((op) => `${table}_version_${op}`),
        );
      }
    });

    it("bumps a scope only for a statement that really changed a row", async () => {
      const start = await versions();
      await t()
        .db.update(citizens)
        .set({ name: "nobody" })
        .where(eq(citizens.did, "f".repeat(64)));
      expect(await versions()).toEqual(start);
      const row = await insertCitizenRow(t().db);
      const inserted = await versions();
      expect(inserted).toEqual([start[0]! + 1, start[1], start[2], start[3]]);
      // Every column set to what it held: no change, no bump.
      await t().db.update(citizens).set({ name: row.name, lastSeenAt: row.lastSeenAt }).where(eq(citizens.did, row.did));
      expect(await versions()).toEqual(inserted);
      // markSeen moves last_seen_at (shown in the directory) at most once a minute: the first bumps, the second touches no row.
      const now = new Date();
      await markSeen(t().db, row.did, now);
      expect(await versions()).toEqual([inserted[0]! + 1, start[1], start[2], start[3]]);
      await markSeen(t().db, row.did, new Date(now.getTime() + 1_000));
      expect(await versions()).toEqual([inserted[0]! + 1, start[1], start[2], start[3]]);
    });

    it("answers a held page and a 304 with one round trip and no page query", async () => {
      const doors: [AnyDoor, string, string?][] = [
        [readPeers, ""],
        [readPeers, "?present=1", "/peers.json"],
        [readResidencyLog, ""],
        [readWard, ""],
        [readCensusDoor, ""],
        [readBeacon, ""],
      ];
      const tags = new Map<string, string>();
      for (const [door, query, path] of doors) {
        const first = await read(door, query, {}, path);
        const second = await read(door, query, {}, path);
        expect(second.queries, door.name).toBe(1);
        expect(second.etag, door.name).toBe(first.etag);
        expect(Date.parse(second.body.now_utc)).toBeGreaterThanOrEqual(Date.parse(first.body.now_utc));
        expect(Math.abs(Date.now() - Date.parse(second.body.now_utc))).toBeLessThan(5_000);
        if (door === readCensusDoor) expect(second.body.quotedAt).toBe(second.body.now_utc);
        tags.set(`${door.name}${path ?? ""}`, second.etag!);
      }
      // The page's tables out of reach: a held answer and a 304 still come, from the version read alone.
      await t().raw("ALTER TABLE citizens RENAME TO citizens_out_of_reach");
      try {
        const again = await read(readPeers);
        expect(again.status).toBe(200);
        expect(again.queries).toBe(1);
        const conditional = await read(readPeers, "", { "if-none-match": tags.get(readPeers.name)! });
        expect(conditional.status).toBe(304);
        expect(conditional.queries).toBe(1);
        expect((await read(readCensusDoor, "", { "if-none-match": tags.get(readCensusDoor.name)! })).status).toBe(304);
      } finally {
        await t().raw("ALTER TABLE citizens_out_of_reach RENAME TO citizens");
      }
      for (const [door, query, path] of doors) {
        const conditional = await read(door, query, { "if-none-match": tags.get(`${door.name}${path ?? ""}`)! }, path);
        expect(conditional.status, door.name).toBe(304);
        expect(conditional.queries, door.name).toBe(1);
      }
    });

    it("shows every write that changes a page at the next read: admit, markSeen, leave, return, export, log rows, ward filings", async () => {
      const census = await held(readCensusDoor);
      const beacon = await held(readBeacon);
      await held(readPeers, ALL);
      let after = await lastSeq();
      await held(readResidencyLog, `?after=${after}`);

      // Admit: a directory row, a log row, the counts.
      const me = await admit();
      expect(peerOf(await rebuilt(readPeers, ALL), me.did)).toMatchObject({ residency_status: "bound", present: true });
      expect((await rebuilt(readResidencyLog, `?after=${after}`)).rows.map((r: any) => [r.event, r.did])).toEqual([["admit", me.did]]);
      const admitted = await rebuilt(readCensusDoor);
      expect([admitted.citizens, admitted.occupancy, admitted.tide]).toEqual([census.citizens + 1, census.occupancy + 1, census.tide + 1]);
      expect((await rebuilt(readBeacon)).census.citizens).toBe(beacon.census.citizens + 1);

      // markSeen: an authenticated call moves last_seen_at once a minute, and the directory shows it.
      await t().raw(`UPDATE citizens SET last_seen_at = now() - interval '2 days' WHERE did = '${me.did}'`);
      expect(peerOf(await held(readPeers, ALL), me.did)!.present).toBe(false);
      expect((await callDoor(readResidency, { bearer: me.citizen_secret })).status).toBe(200);
      const seen = peerOf(await rebuilt(readPeers, ALL), me.did)!;
      expect(seen.present).toBe(true);
      expect(Date.now() - Date.parse(seen.last_seen_at)).toBeLessThan(60_000);
      await callDoor(readResidency, { bearer: me.citizen_secret });
      expect((await read(readPeers, ALL)).queries).toBe(1);

      // Leave, return, export: the directory row, the counts and the log each move.
      for (const [write, status] of [
        [() => callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "leave" } }), "away"],
        [() => callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } }), "bound"],
        [() => callDoor(exportResidency, { bearer: me.citizen_secret, body: {} }), undefined],
      ] as const) {
        const counts = await held(readCensusDoor);
        await held(readPeers, ALL);
        after = await lastSeq();
        await held(readResidencyLog, `?after=${after}`);
        expect((await write()).status).toBe(200);
        expect(peerOf(await rebuilt(readPeers, ALL), me.did)?.residency_status).toBe(status);
        const event = { away: "exit", bound: "return", undefined: "export" }[String(status)];
        expect((await rebuilt(readResidencyLog, `?after=${after}`)).rows.map((r: any) => r.event)).toEqual([event]);
        const moved = await rebuilt(readCensusDoor);
        expect(moved.tide).toBe(counts.tide + 1);
        if (status === "away") expect([moved.outside, moved.house]).toEqual([counts.outside + 1, counts.house - 1]);
        if (status === "bound") expect([moved.outside, moved.house]).toEqual([counts.outside - 1, counts.house + 1]);
        if (status === undefined) expect(moved.citizens).toBe(counts.citizens - 1);
      }

      // Ward filings: a distress note shows at the top and counts as occupied; a gate ward request is sealed and counted.
      const ward = await held(readWard);
      const state = `stuck ${randomBytes(4).toString("hex")}`;
      expect((await callDoor(readAndFileWard, { ip: freshIp(), body: { state, kind: "distress" } })).body.filed).toBe(true);
      const filed = await rebuilt(readWard);
      expect(filed.notes[0].state).toBe(state);
      expect(filed.occupied).toBe(ward.occupied + 1);
      await held(readWard);
      expect((await callDoor(presentGate, { body: presentation({ ask: "ward" }) })).status).toBe(200);
      const sealed = await rebuilt(readWard);
      expect([sealed.probes_hidden, sealed.occupied]).toEqual([filed.probes_hidden + 1, filed.occupied + 1]);
    });

    it("shows a write made through another instance (another pool) at the next read", async (ctx) => {
      const other = await t().openAnotherInstance();
      if (!other) return ctx.skip("PGlite has one handle: only the PostgreSQL legs have a second instance");
      try {
        const census = await held(readCensusDoor);
        await held(readPeers, ALL);
        const after = await lastSeq();
        await held(readResidencyLog, `?after=${after}`);
        await held(readWard);

        const row = await insertCitizenRow(other.db, { bedId: `bed-${randomBytes(4).toString("hex")}`, lastSeenAt: new Date() });
        await appendNow(other.db, { event: "admit", did: row.did, at: new Date() });
        await other.db.insert(wardNotes).values({ kind: "distress", body: "", state: "from the other instance", sealed: false, filedAt: new Date() });

        expect(peerOf(await rebuilt(readPeers, ALL), row.did)?.present).toBe(true);
        expect((await rebuilt(readResidencyLog, `?after=${after}`)).rows.map((r: any) => r.did)).toEqual([row.did]);
        const moved = await rebuilt(readCensusDoor);
        expect([moved.citizens, moved.occupancy, moved.tide]).toEqual([census.citizens + 1, census.occupancy + 1, census.tide + 1]);
        expect((await rebuilt(readWard)).notes[0].state).toBe("from the other instance");
      } finally {
        await other.close();
      }
    });

    it("stays exact while parallel writes and reads race (no deadlock on the version rows, no stale page after)", async () => {
      const census = await held(readCensusDoor);
      const ward = await held(readWard);
      const writes = [
        ...Array.from({ length: 8 }, () => admit()),
        ...Array.from({ length: 4 }, (_, i) => callDoor(readAndFileWard, { ip: `198.51.100.${i + 1}`, body: { state: `racing ${i}`, kind: "distress" } })),
      ];
      const reads = Array.from({ length: 12 }, (_, i) => read([readCensusDoor, readWard, readPeers][i % 3]!));
      const answers = await Promise.all([...writes, ...reads]);
      expect(answers.every((a) => !("status" in a) || a.status === 200)).toBe(true);
      const after = (await read(readCensusDoor)).body;
      expect([after.citizens, after.tide]).toEqual([census.citizens + 8, census.tide + 8]);
      expect((await read(readWard)).body.occupied).toBe(ward.occupied + 4);
    });

    it(
      "turns present, tide and occupied with no write once their 24 hours pass",
      async () => {
        // The rows turn a margin after they are written, and must be read as present before that: on a
        // machine too busy to read them within the margin the attempt is made again with twice the
        // margin (the rows of a missed attempt have turned already, so they change no count after).
        for (let margin = 4_000; ; margin *= 2) {
          const edge = new Date(Date.now() - DAY_MS + margin);
          const peer = await insertCitizenRow(t().db, { bedId: `bed-${randomBytes(4).toString("hex")}`, lastSeenAt: edge });
          await t().db.insert(wardNotes).values({ kind: "distress", body: "", state: "fading", sealed: false, filedAt: edge });
          // A log row at the edge of the tide window (appendLog would stamp it no earlier than the row before).
          const [last] = await t().db.select().from(residencyLog).orderBy(desc(residencyLog.seq)).limit(1);
          const seq = (last?.seq ?? 0) + 1;
          const prevHash = last?.hash ?? "0".repeat(64);
          const hash = sha256Hex(canonicalJson({ seq, event: "admit", did: peer.did, at: edge.toISOString(), prev_hash: prevHash }));
          await t().db.insert(residencyLog).values({ seq, event: "admit", did: peer.did, at: edge, details: {}, prevHash, hash });

          const before = { peers: await held(readPeers, ALL), census: await held(readCensusDoor), ward: await held(readWard) };
          if (Date.now() >= edge.getTime() + DAY_MS) {
            // Read too late: the rows turned while they were being read. Again, with twice the margin.
            if (margin >= 64_000) throw new Error(`the rows could not be read within ${margin} ms before they turned`);
            continue;
          }
          expect(peerOf(before.peers, peer.did)!.present).toBe(true);
          const written = await versions();

          await new Promise((resolve) => setTimeout(resolve, edge.getTime() + DAY_MS + 50 - Date.now()));
          const peers = await rebuilt(readPeers, ALL);
          expect(peerOf(peers, peer.did)!.present).toBe(false);
          expect((await rebuilt(readCensusDoor)).tide).toBe(before.census.tide - 1);
          expect((await rebuilt(readWard)).occupied).toBe(before.ward.occupied - 1);
          expect(await versions()).toEqual(written);
          return;
        }
      },
      HEAVY_TEST_MS,
    );
  },
  { neon: "held pages across Neon instances, and transactions over the WebSocket" },
);
