import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { LogEvent } from "@/db/schema";
import { appendNow, readLatestLogRows, readResidencyDays } from "@/lib/city/logs/residency-log";
import { describeOnDatabases } from "../../support/databases";

const did = () => randomBytes(32).toString("hex");
const at = (day: string, hour: number) => new Date(`${day}T${String(hour).padStart(2, "0")}:00:00.000Z`);

describeOnDatabases(
  "the city over time, from the residency log",
  (t) => {
    const now = at("2026-03-10", 18);

    it("shows every day of an empty city as zeros", async () => {
      const days = await readResidencyDays(t().db, { days: 3, now });
      expect(days).toEqual(["2026-03-08", "2026-03-09", "2026-03-10"].map((day) => ({ day, admits: 0, exits: 0, returns: 0, exports: 0, occupancy: 0 })));
      expect(await readLatestLogRows(t().db, 5)).toEqual([]);
    });

    describe("after admits, exits, returns and exports", () => {
      const [a, b, c, d] = [did(), did(), did(), did()];
      const events: [LogEvent, string, Date][] = [
        ["admit", a, at("2026-03-01", 9)], // before the window: its bed is carried in
        ["admit", b, at("2026-03-08", 9)],
        ["exit", a, at("2026-03-09", 8)],
        ["admit", c, at("2026-03-09", 9)],
        ["export", c, at("2026-03-09", 10)], // export straight from a bed frees it
        ["return", a, at("2026-03-10", 7)],
        ["admit", d, at("2026-03-10", 8)],
        ["exit", d, at("2026-03-10", 9)],
        ["export", d, at("2026-03-10", 10)], // export after exit frees nothing more
      ];

      beforeAll(async () => {
        for (const [event, who, when] of events) await appendNow(t().db, { event, did: who, at: when });
      });

      it("counts admits, exits, returns and exports per UTC day and carries occupancy across days", async () => {
        expect(await readResidencyDays(t().db, { days: 3, now })).toEqual([
          { day: "2026-03-08", admits: 1, exits: 0, returns: 0, exports: 0, occupancy: 2 },
          { day: "2026-03-09", admits: 1, exits: 1, returns: 0, exports: 1, occupancy: 1 },
          { day: "2026-03-10", admits: 1, exits: 1, returns: 1, exports: 1, occupancy: 2 },
        ]);
      });

      it("keeps the occupancy over quiet days after the last event", async () => {
        const later = await readResidencyDays(t().db, { days: 2, now: at("2026-03-20", 1) });
        expect(later).toEqual([
          { day: "2026-03-19", admits: 0, exits: 0, returns: 0, exports: 0, occupancy: 2 },
          { day: "2026-03-20", admits: 0, exits: 0, returns: 0, exports: 0, occupancy: 2 },
        ]);
      });

      it("reads the newest log rows first, as published", async () => {
        const latest = await readLatestLogRows(t().db, 2);
        expect(latest.map((r) => [r.seq, r.event, r.did])).toEqual([
          [9, "export", d],
          [8, "exit", d],
        ]);
        expect(latest[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
        expect(latest[0]!.prev_hash).toBe(latest[1]!.hash);
      });
    });
  },
  { ordered: "the empty city is read first, then the log grows test by test" },
);
