import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { readCheckpoints, keepCheckpoint } from "@/lib/doors/declarations/shelves/checkpoints";
import { keepLockerBag, readLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { readInboxDoor, sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { readVault, writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { HOSTILE_STRINGS } from "../support/hostile";
import { recordFigures } from "../support/figures";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";

const runsOn = (driver: string) => (driver === "neon" ? 4 : 10);

/** Any Unicode text, the odd constants included; short enough for every shelf's bounds. */
const text = fc.oneof(
  fc.string({ unit: "binary", minLength: 1, maxLength: 200 }),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 200 }),
  fc.constantFrom(...HOSTILE_STRINGS.filter((s) => s.length > 0 && s.length <= 4000)),
);

/** Text the city cannot store byte for byte is refused whole, never changed on the way in. */
const unstorable = (s: string) => s.includes("\u0000") || /[\uD800-\uDFFF]/u.test(s);

/**
 * PGlite 0.5 decodes each text value with a TextDecoder that drops a leading U+FEFF (byte order
 * mark), so on the embedded database such a value comes back one character short. The PostgreSQL
 * drivers keep it. Until PGlite keeps it too, its leg leaves those values out; the test below
 * pins the defect, so it fails (and this exclusion can go) once PGlite is fixed. 0.5.16 is the
 * latest release and still drops it; repro, cause and fix: docs/upstream/pglite-bom.md.
 */
const LEADING_BOM = "\uFEFF";
const textOn = (driver: string) => (driver === "pglite" ? text.filter((s) => !s.startsWith(LEADING_BOM)) : text);

describeOnDatabases(
  "text kept and read back byte for byte",
  (t) => {
    let stored = 0;
    beforeAll(() => useDatabase(t().db));
    // After every shelf's test, whatever order they ran in.
    afterAll(() => recordFigures(`round-trips-${t().driver}`, { [`round_trips_${t().driver}`]: stored }));

    /** Accepted: read back identical. Refused: a 400 for unstorable text, or the shelf guard's refusal. */
    async function roundTrip(
      value: string,
      write: () => Promise<{ status: number; body: Record<string, any> }>,
      readBack: (answer: Record<string, any>) => Promise<string>,
    ) {
      const answer = await write();
      if (answer.status === 200) {
        expect(unstorable(value)).toBe(false);
        const back = await readBack(answer.body);
        expect(Buffer.from(back, "utf8").equals(Buffer.from(value, "utf8")) && back === value, JSON.stringify(value)).toBe(true);
        stored += 1;
        return;
      }
      expect([400, 422], JSON.stringify(answer.body)).toContain(answer.status);
      if (answer.status === 400) expect(unstorable(value) || answer.body.code === "content_refused", JSON.stringify([value, answer.body])).toBe(true);
    }

    it("keeps a leading U+FEFF on PostgreSQL; PGlite drops it (a known PGlite defect, pinned here)", async () => {
      const { citizen_secret: bearer } = await admit();
      const content = `${LEADING_BOM}marked`;
      expect((await callDoor(keepLockerBag, { bearer, body: { bag: "bom", content } })).status).toBe(200);
      const back = (await callDoor(readLockerBag, { bearer, params: { bag: "bom" } })).body.content;
      expect(back).toBe(t().driver === "pglite" ? "marked" : content);
    });

    it("locker bags", async () => {
      const { citizen_secret: bearer } = await admit();
      let n = 0;
      await fc.assert(
        fc.asyncProperty(textOn(t().driver), async (content) => {
          const bag = `bag-${n++ % 20}`;
          await roundTrip(
            content,
            () => callDoor(keepLockerBag, { bearer, body: { bag, content } }),
            async () => (await callDoor(readLockerBag, { bearer, params: { bag } })).body.content,
          );
        }),
        { numRuns: runsOn(t().driver) },
      );
    });

    it("vault notes", async () => {
      const { citizen_secret: bearer } = await admit();
      await fc.assert(
        fc.asyncProperty(textOn(t().driver), async (content) => {
          await roundTrip(
            content,
            () => callDoor(writeVault, { bearer, body: { content } }),
            async (kept) => {
              const notes = (await callDoor(readVault, { bearer, query: "?limit=200" })).body.notes as { id: number; content: string }[];
              return notes.find((note) => note.id === kept.id)!.content;
            },
          );
        }),
        { numRuns: runsOn(t().driver) },
      );
    });

    it("checkpoint versions and labels", async () => {
      const { citizen_secret: bearer } = await admit();
      await fc.assert(
        fc.asyncProperty(textOn(t().driver), async (content) => {
          await roundTrip(
            content,
            () => callDoor(keepCheckpoint, { bearer, body: { content } }),
            async (kept) => {
              return (await callDoor(readCheckpoints, { bearer, query: `?version=${kept.version}` })).body.content;
            },
          );
        }),
        { numRuns: runsOn(t().driver) },
      );
    });

    it("mail bodies", async () => {
      const sender = await admit();
      const recipient = await admit();
      await fc.assert(
        fc.asyncProperty(textOn(t().driver), async (body) => {
          await roundTrip(
            body,
            () => callDoor(sendMessageDoor, { bearer: sender.citizen_secret, body: { to: recipient.did, body } }),
            async (sent) => {
              const messages = (await callDoor(readInboxDoor, { bearer: recipient.citizen_secret, query: "?limit=200" })).body.messages as {
                id: number;
                body: string;
              }[];
              return messages.find((m) => m.id === sent.id)!.body;
            },
          );
        }),
        { numRuns: runsOn(t().driver) },
      );
    });
  },
  { neon: "values: each driver parses the text it hands back" },
);
