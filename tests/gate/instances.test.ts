import { count, eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { quarantine, vaultNotes } from "@/db/schema";
import { consumeNonce, issueNonce } from "@/lib/city/challenge";
import { presentAtGate } from "@/lib/city/gate";
import { nonceSpent, presentation } from "../support/gate";
import { keepNote } from "@/lib/city/shelves";
import { insertCitizenRow } from "../support/citizens";
import { describeOnDatabases } from "../support/databases";

/*
 * "Holds across serverless instances": two separate database handles (two Neon pools, as two
 * instances would hold) race one limit. PGlite has one handle only, so there the test is skipped
 * and says so; on PostgreSQL the handles are two pools of real connections.
 */
describeOnDatabases(
  "limits hold across two instances",
  (t) => {
    let other: { db: Database; close: () => Promise<void> } | null = null;
    beforeAll(async () => {
      other = await t().openAnotherInstance();
    });
    afterAll(async () => {
      await other?.close();
    });

    const instances = () => [t().db, other!.db];

    it("stores exactly 30 vault notes of 40 written in parallel through two instances, and parks exactly 10", async (ctx) => {
      if (!other) return ctx.skip("PGlite has one handle: only the PostgreSQL leg has two instances");
      const citizen = await insertCitizenRow(t().db);
      const now = new Date();
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          instances()[i % 2]!.transaction((tx) =>
            keepNote(tx as Database, { did: citizen.did, restricted: false, content: `instance ${i % 2} note ${i}`, now }),
          ),
        ),
      );
      expect(answers.filter((a) => "parked" in a)).toHaveLength(10);
      expect((await t().db.select({ n: count() }).from(vaultNotes).where(eq(vaultNotes.did, citizen.did)))[0]!.n).toBe(30);
      expect((await other.db.select({ n: count() }).from(quarantine).where(eq(quarantine.did, citizen.did)))[0]!.n).toBe(10);
    });

    it("consumes one gate nonce exactly once when both instances race for it", async (ctx) => {
      if (!other) return ctx.skip("PGlite has one handle: only the PostgreSQL leg has two instances");
      for (let round = 0; round < 5; round++) {
        const { nonce } = await issueNonce(t().db, new Date(), null, 0);
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => instances()[i % 2]!.transaction((tx) => consumeNonce(tx as Database, nonce, new Date()))),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
      }
    });

    it("admits exactly one of parallel first admissions carrying one gate nonce through both instances (the spent row's primary key)", async (ctx) => {
      if (!other) return ctx.skip("PGlite has one handle: only the PostgreSQL leg has two instances");
      const now = new Date();
      const { nonce } = await issueNonce(t().db, now, null, 0);
      const circumstances = (i: number) => ({
        now,
        ip: `10.42.0.${i}`,
        callerDid: null,
        credential: null,
        credentialRejected: false,
        limits: { perOriginPerHour: 1000, perAddressPerHour: 0, admissionsPerHour: 0 },
      });
      const verdicts = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          instances()[i % 2]!.transaction((tx) =>
            presentAtGate(tx as Database, presentation({ origin: `race-${i}.example`, nonce }) as never, circumstances(i)),
          ),
        ),
      );
      expect(verdicts.filter((v) => v.verdict === "admitted")).toHaveLength(1);
      expect(verdicts.filter((v) => v.verdict === "filtered" && v.rule === "nonce")).toHaveLength(11);
      expect(await nonceSpent(t().db, nonce)).toBe(true);
    });
  },
  { neon: "a second serverless instance is a second Neon pool on the same database" },
);
