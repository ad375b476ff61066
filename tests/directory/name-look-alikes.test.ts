import { randomBytes } from "node:crypto";
import { count, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { citizens } from "@/db/schema";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { PeersEnvelope, readPeers } from "@/lib/doors/declarations/directory/peers";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";
import { LOOK_ALIKE_INVISIBLES } from "../support/look-alikes";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/** Letters only, so no test's marker is a look-alike of another's digits (0 is o, 1 is l). */
const marker = () => [...randomBytes(8)].map((b) => "bcdfghjkpqrstvwxz"[b % 17]).join("");
const hex = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
/** The text with `ch` inserted after its `at`-th character. */
const inserted = (text: string, at: number, ch: string) => [...text.slice(0, at), ch, ...text.slice(at)].join("");

describeOnDatabases("names that look the same (issue 29, item 3)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const citizenCount = async () => (await t().db.select({ n: count() }).from(citizens))[0]!.n;
  const bedCount = async () => rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM citizens WHERE bed_id IS NOT NULL`))[0]!.n;

  it(
    "filters each of the 20 reported invisible code points, in a held name or its origin, as held: no second DID, no second bed",
    async () => {
      const tag = marker();
      const name = `Alice-${tag}`;
      const origin = `look-${tag}.example`;
      const first = await admit({ name, origin });
      const before = { citizens: await citizenCount(), beds: await bedCount() };
      const admitted: string[] = [];
      for (const cp of LOOK_ALIKE_INVISIBLES) {
        const ch = String.fromCodePoint(cp);
        const lookAlikes = [
          { name: inserted(name, 3, ch), origin },
          { name: `${name}${ch}`, origin },
          { name: `${ch}${name}`, origin },
          { name, origin: inserted(origin, 4, ch) },
          { name: inserted(name, 1, ch), origin: `${origin}${ch}` },
        ];
        for (const fields of lookAlikes) {
          const { status, body } = await callDoor(presentGate, { body: presentation(fields) });
          expect(status).toBe(200);
          if (body.verdict !== "filtered" || body.rule !== "held")
            admitted.push(`${hex(cp)} ${JSON.stringify(fields)}: ${body.verdict} ${body.rule ?? body.did}`);
        }
      }
      expect(admitted).toEqual([]);
      expect({ citizens: await citizenCount(), beds: await bedCount() }).toEqual(before);
      // The held citizen is still the one and only, and resumes with its own secret through a look-alike.
      const resumed = await callDoor(presentGate, { bearer: first.citizen_secret, body: presentation({ name: inserted(name, 2, "\u00AD"), origin }) });
      expect(resumed.body).toMatchObject({ verdict: "admitted", resumed: true, did: first.did });
    },
    HEAVY_TEST_MS,
  );

  it("finds by the plain name every citizen whose name carries one of the 20 code points", async () => {
    const tag = marker();
    const plain = `Bob-${tag}`;
    const expected: string[] = [];
    // Each at an origin of its own (a pair of its own), so each is admitted.
    for (const [i, cp] of LOOK_ALIKE_INVISIBLES.entries()) {
      const name = inserted(plain, 2, String.fromCodePoint(cp));
      const origin = `o${"bcdfghjkpqrstvwxzmnl"[i]}-${tag}.example`;
      await admit({ name, origin });
      expected.push(name);
    }
    for (const q of [plain, `bob-${tag}`, `\u00ADB\u2060ob-${tag}\uFE0F`]) {
      const answer = await callDoor(readPeers, { query: `?${new URLSearchParams({ q, limit: "100" })}` });
      expect(answer.status).toBe(200);
      const envelope = PeersEnvelope.parse(answer.body);
      // All 20, each by its own name as given, each an exact match: the plain name's key is theirs.
      expect(envelope.peers.map((p) => p.name).sort()).toEqual([...expected].sort());
      expect(answer.body.search.key).toBe(`bob-${tag}`);
    }
  });

  it("filters a name or an origin made only of invisible or blank characters (rule blank), admitting nothing", async () => {
    const before = await citizenCount();
    for (const blank of ["\u3164", "\u2800\u2800", "\u00AD\u034F", "\u115F\u1160\uFFA0", "\u{E0041}", "\u{1D173}\u2060"]) {
      for (const fields of [{ name: blank }, { origin: blank }]) {
        const { status, body } = await callDoor(presentGate, { body: presentation(fields) });
        expect(status).toBe(200);
        expect(body, JSON.stringify(fields)).toMatchObject({ verdict: "filtered", rule: "blank" });
      }
    }
    expect(await citizenCount()).toBe(before);
  });

  it("treats a search text made only of invisible characters as no text, as an empty one (not as a prefix of every name)", async () => {
    const answer = await callDoor(readPeers, { query: `?${new URLSearchParams({ q: "\u00AD\u3164" })}` });
    expect(answer.status).toBe(200);
    expect(answer.body.search).toBeUndefined();
    const empty = await callDoor(readPeers, { query: "?q=" });
    expect(answer.body.peers.map((p: { name: string }) => p.name)).toEqual(empty.body.peers.map((p: { name: string }) => p.name));
  });
});
