import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { messages, posts, quarantine, vaultNotes } from "@/db/schema";
import { appendNow } from "@/lib/city/logs/residency-log";
import type { AnyDoor } from "@/lib/doors/door";
import { readInboxDoor } from "@/lib/doors/declarations/mail/mail";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { readBazaar, readPlaza, readRoom } from "@/lib/doors/declarations/posts/posts";
import { readQuarantine } from "@/lib/doors/declarations/quarantine/quarantine";
import { readResidencyLog } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { readVault } from "@/lib/doors/declarations/shelves/vault";
import { insertCitizenRow } from "../support/citizens";
import { HEAVY_TEST_MS, describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

// More rows than any default page (the largest default is 100), so the default page has a next one.
const ROWS = 130;

interface ListDoor {
  door: AnyDoor;
  rows: (body: Record<string, any>) => { id: string | number }[];
  key: (row: Record<string, any>) => string | number;
  /** The next page's query, read from the body alone. */
  next: (body: Record<string, any>) => string | null;
  params?: Record<string, string>;
}

describeOnDatabases("list doors walk to the end by the body cursor", (t) => {
  beforeAll(() => useDatabase(t().db));

  async function walk(list: ListDoor, bearer?: string): Promise<(string | number)[]> {
    const seen: (string | number)[] = [];
    let query = "";
    for (let pages = 0; pages < 1000; pages++) {
      const answer = await callDoor(list.door, { bearer, query, params: list.params });
      expect(answer.status, `${list.door.name}${query}: ${JSON.stringify(answer.body).slice(0, 200)}`).toBe(200);
      seen.push(...list.rows(answer.body).map(list.key));
      const next = list.next(answer.body);
      const link = answer.headers.get("link");
      if (next === null) {
        expect(link, list.door.name).toBeNull();
        return seen;
      }
      // The Link header names the same next page.
      const linked = new URL(link!.match(/^<([^>]+)>; rel="next"$/)![1]!, "http://city.test");
      expect(linked.search, list.door.name).toBe(`?${next}`);
      query = `?${next}`;
    }
    throw new Error(`${list.door.name} never ends`);
  }

  it(
    "walks every list door from its default page to its last, every row exactly once",
    async () => {
      const me = await admit();
      const other = await admit();
      const db = t().db;
      const now = Date.now();
      for (let i = 0; i < ROWS; i++) {
        const at = new Date(now - (ROWS - i) * 1000);
        const citizen = await insertCitizenRow(db, { boundAt: at, bedId: `bed-walk-${process.pid}-${i}` });
        await appendNow(db, { event: "admit", did: citizen.did, at });
        await db.insert(messages).values({ fromDid: other.did, toDid: me.did, body: `m${i}`, createdAt: at, readAt: i % 3 === 0 ? at : null });
        await db.insert(vaultNotes).values({ did: me.did, content: `n${i}`, createdAt: at });
        await db.insert(quarantine).values({ did: me.did, door: "write-vault", reason: "flood", payload: { i }, parkedAt: at });
        for (const [board, room] of [
          ["bazaar", null],
          ["plaza", null],
          ["room", "walk-room"],
        ] as const) {
          await db.insert(posts).values({ board, room, did: other.did, body: `${board}${i}`, createdAt: at });
        }
      }
      const before = (key: string) => (body: Record<string, any>) => (body[key] === null ? null : `before=${body[key]}`);
      const lists: [ListDoor, string | undefined][] = [
        [
          {
            door: readPeers,
            rows: (b) => b.peers,
            key: (r) => r.fingerprint,
            next: (b) => (b.next.cursor === null ? null : `cursor=${encodeURIComponent(b.next.cursor)}`),
          },
          undefined,
        ],
        [{ door: readResidencyLog, rows: (b) => b.rows, key: (r) => r.seq, next: (b) => (b.next_after === null ? null : `after=${b.next_after}`) }, undefined],
        [
          {
            door: readInboxDoor,
            rows: (b) => b.messages,
            key: (r) => r.id,
            next: (b) => (b.next_cursor === null ? null : `cursor=${encodeURIComponent(b.next_cursor)}`),
          },
          me.citizen_secret,
        ],
        [{ door: readVault, rows: (b) => b.notes, key: (r) => r.id, next: before("next_before") }, me.citizen_secret],
        [{ door: readQuarantine, rows: (b) => b.parked, key: (r) => r.id, next: before("next_before") }, me.citizen_secret],
        [{ door: readBazaar, rows: (b) => b.posts, key: (r) => r.id, next: before("next_before") }, undefined],
        [{ door: readPlaza, rows: (b) => b.posts, key: (r) => r.id, next: before("next_before") }, undefined],
        [{ door: readRoom, rows: (b) => b.posts, key: (r) => r.id, next: before("next_before"), params: { room: "walk-room" } }, undefined],
      ];
      const expected: Record<string, number> = {
        "list-peers": ROWS + 2,
        "read-residency-log": ROWS + 2,
        "read-inbox": ROWS,
        "read-vault": ROWS,
        "read-quarantine": ROWS,
        "read-bazaar": ROWS,
        "read-plaza": ROWS,
        "read-room": ROWS,
      };
      for (const [list, bearer] of lists) {
        const first = await callDoor(list.door, { bearer, params: list.params });
        expect(list.next(first.body), `${list.door.name}: the default page carries its next cursor`).not.toBeNull();
        const seen = await walk(list, bearer);
        expect(new Set(seen).size, list.door.name).toBe(seen.length);
        expect(seen.length, list.door.name).toBe(expected[list.door.name]);
      }
    },
    HEAVY_TEST_MS,
  );
});
