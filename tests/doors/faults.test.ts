import { eq, sql } from "drizzle-orm";
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import { z } from "zod";
import { openNeon, openPg } from "@/db/client";
import { useDatabase } from "@/lib/city/database";
import { citizens, vaultNotes } from "@/db/schema";
import { door } from "@/lib/doors/door";
import { readCensusDoor } from "@/lib/doors/surfaces/discovery";
import { sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { recoverDoor } from "@/lib/doors/declarations/keys/recover";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { expectProblem } from "../support/assertions";
import { insertCitizenRow } from "../support/citizens";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/** A write door that inserts a citizen, then answers outside its own schema. */
let insertedDid = "";
const badAnswer = door({
  name: "bad-answer-test",
  method: "POST",
  path: "/api/bad-answer",
  summary: "Inserts a row, then answers outside its schema (test door).",
  auth: "none",
  input: z.object({}),
  output: z.object({ now_utc: z.string(), did: z.string() }),
  run: async (ctx) => {
    insertedDid = (await insertCitizenRow(ctx.db)).did;
    return { now_utc: ctx.now.toISOString(), did: 42 } as unknown as { now_utc: string; did: string };
  },
});

/** Everything the process prints while `work` runs: every console method and both streams. */
async function captureLogs(work: () => Promise<void>): Promise<string> {
  const lines: string[] = [];
  const keep = (...args: unknown[]) =>
    void lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a, Object.getOwnPropertyNames(a ?? {})))).join(" "));
  for (const method of ["log", "info", "warn", "error", "debug", "trace"] as const) vi.spyOn(console, method).mockImplementation(keep);
  for (const stream of [process.stdout, process.stderr]) {
    vi.spyOn(stream, "write").mockImplementation(((chunk: unknown) => {
      lines.push(String(chunk));
      return true;
    }) as typeof stream.write);
  }
  try {
    await work();
  } finally {
    vi.restoreAllMocks();
  }
  return lines.join("\n");
}

describeOnDatabases(
  "faults, rollbacks and logs",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    afterEach(() => useDatabase(t().db));

    it("rolls a write back when the door's answer fails its own schema: 500, and the row is absent", async () => {
      const logs = await captureLogs(async () => {
        expectProblem(await callDoor(badAnswer, { body: {} }), 500, "internal_error");
      });
      expect(insertedDid).toMatch(/^[0-9a-f]{64}$/);
      expect(await t().db.select().from(citizens).where(eq(citizens.did, insertedDid))).toEqual([]);
      // One structured line names the door and the failing path, never the answer itself.
      expect(logs).toContain('"msg":"answer outside schema","door":"bad-answer-test","paths":"did"');
    });

    it("answers 503 with Retry-After when the database is unreachable, for reading and writing doors", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite runs in this process: there is no server to lose");
      // A real unreachable server: the TCP connection to 127.0.0.1:1 is refused (through the relay on Neon).
      const admitted = await admit();
      const citizen = { secret: admitted.citizen_secret };
      const nowhere = "postgres://postgres@127.0.0.1:1/postgres";
      const unreachable = t().driver === "neon" ? await openNeon(nowhere) : await openPg(nowhere);
      try {
        useDatabase(unreachable.db);
        const logs = await captureLogs(async () => {
          for (const answer of [
            await callDoor(readCensusDoor),
            await callDoor(writeVault, { bearer: citizen.secret, body: { content: "a note for nobody" } }),
          ]) {
            const problem = expectProblem(answer, 503, "unavailable");
            expect(answer.headers.get("retry-after")).toMatch(/^\d+$/);
            expect(problem.retry_after_seconds).toBeGreaterThan(0);
            expect(JSON.stringify(problem)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres|select|insert/i);
          }
        });
        expect(logs).not.toContain(citizen.secret);
        expect(logs).not.toContain("a note for nobody");
      } finally {
        useDatabase(t().db);
        await unreachable.close().catch(() => undefined);
      }
    });

    it("answers 503 with Retry-After, changing nothing, when the database ends the request's transaction to break a deadlock", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite runs one statement at a time: no two transactions ever wait on each other");
      const me = await admit();
      const other = (await t().openAnotherInstance())!;
      const waiting = async () => {
        const result = (await t().db.execute(
          sql.raw("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"),
        )) as unknown as { rows?: { n: unknown }[] };
        return Number(result.rows?.[0]?.n ?? 0);
      };
      // Another party holds every stripe of the census counts, and only once the leave below holds the
      // citizen's row and waits for its stripe (its UPDATE moves the counts) does it ask for that row:
      // a cycle. Its own detector waits 10 s, so the leave's (1 s, the server's default) finds the
      // cycle, and the server ends the leave.
      let leave: Promise<Awaited<ReturnType<typeof callDoor>>> | undefined;
      await other.db.transaction(async (tx) => {
        await tx.execute(sql`SET LOCAL deadlock_timeout = '10s'`);
        await tx.execute(sql`SELECT 1 FROM census_counts FOR UPDATE`);
        leave = callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "leave" } });
        for (let i = 0; i < 100 && (await waiting()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
        await tx.execute(sql`SELECT 1 FROM citizens WHERE did = ${me.did} FOR UPDATE`);
      });
      const answer = await leave!;
      expect(expectProblem(answer, 503, "unavailable").retry_after_seconds).toBeGreaterThan(0);
      expect(String(answer.body.detail)).toMatch(/Nothing was changed/);
      const [row] = await t().db.select({ status: citizens.residencyStatus, bed: citizens.bedId }).from(citizens).where(eq(citizens.did, me.did));
      expect(row).toEqual({ status: "bound", bed: me.bed_id });
      expect((await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "leave" } })).status).toBe(200);
    });

    it("answers 503 (never a 500) while the server ends every connection, and serves again by itself", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite runs in this process: there is no connection to end");
      const admitted = await admit();
      const bearer = admitted.citizen_secret;
      // The server ends every other connection to this database, as a failover or restart does; the
      // number of backends it ended is counted, so a fault that never landed fails the test.
      // It is sent from a handle of its own, so every connection of the city's pool is ended.
      const operator = (await t().openAnotherInstance())!;
      const ended = async () => {
        const result = (await operator.db.execute(
          sql.raw(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
          ),
        )) as unknown as { rows?: { n: unknown }[] };
        return Number(result.rows?.[0]?.n ?? 0);
      };
      const backendsEnded: number[] = [];
      const statuses: number[] = [];
      const answersOk: string[] = [];
      // At least three rounds, and more (up to 20) until a cut lands mid-query: node-postgres quietly
      // drops an idle connection that was ended, so there only a cut during a request is felt.
      for (let round = 0; round < 3 || (round < 20 && !statuses.includes(503)); round++) {
        // The pool holds open connections for the server to end.
        await Promise.all([callDoor(readCensusDoor), callDoor(readCensusDoor)]);
        const cut = ended();
        const answers = await Promise.all([callDoor(readCensusDoor), callDoor(writeVault, { bearer, body: { content: `after the cut ${round}` } })]);
        backendsEnded.push(await cut);
        if (answers[1]!.status === 200) answersOk.push(`after the cut ${round}`);
        for (const answer of answers) {
          statuses.push(answer.status);
          if (answer.status >= 500) expect(expectProblem(answer, 503, "unavailable").retry_after_seconds).toBeGreaterThan(0);
        }
      }
      // The fault landed: backends were really ended, and the city felt it (at least one 503).
      expect(
        backendsEnded.every((n) => n > 0),
        `backends ended per round: ${backendsEnded.join(",")}`,
      ).toBe(true);
      expect(statuses, `statuses: ${statuses.join(",")}`).toContain(503);
      expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
      // Back by itself: the pool opens fresh connections, with no restart.
      expect((await callDoor(readCensusDoor)).status).toBe(200);
      const accepted = answersOk.length;
      const kept = await callDoor(writeVault, { bearer, body: { content: "after the faults" } });
      expect(kept.status).toBe(200);
      // Nothing half-done: the notes stored are exactly the writes that were answered 200.
      const stored = await t().db.select({ content: vaultNotes.content }).from(vaultNotes).where(eq(vaultNotes.did, admitted.did));
      expect(stored.map((r) => r.content).sort()).toEqual([...answersOk, "after the faults"].sort());
      expect(stored).toHaveLength(accepted + 1);
    });

    it("never logs a secret, a code or a body: admissions, recovery, mail, vault, refusals and failures", async () => {
      const secrets: string[] = [];
      const logs = await captureLogs(async () => {
        const a = await admit();
        const b = await admit();
        secrets.push(a.citizen_secret, b.citizen_secret);
        const minted = await callDoor(recoverDoor, { bearer: a.citizen_secret, body: { mint: true } });
        expect(minted.status).toBe(200);
        secrets.push(...(minted.body.codes as string[]));
        const redeemed = await callDoor(recoverDoor, { body: { did: a.did, code: minted.body.codes[0] } });
        expect(redeemed.status).toBe(200);
        secrets.push(redeemed.body.citizen_secret);
        const mailBody = `mail body ${Math.random().toString(36).slice(2)}`;
        const note = `vault note ${Math.random().toString(36).slice(2)}`;
        secrets.push(mailBody, note);
        expect((await callDoor(sendMessageDoor, { bearer: b.citizen_secret, body: { to: a.did, body: mailBody } })).status).toBe(200);
        expect((await callDoor(writeVault, { bearer: b.citizen_secret, body: { content: note } })).status).toBe(200);
        const pasted = `city_sk_${"5e".repeat(36)}`;
        secrets.push(pasted);
        expect((await callDoor(writeVault, { bearer: b.citizen_secret, body: { content: pasted } })).status).toBe(422);
        // The old secret is dead now: a refused credential is not logged either.
        expect((await callDoor(writeVault, { bearer: a.citizen_secret, body: { content: note } })).status).toBe(401);
        expectProblem(await callDoor(badAnswer, { body: {} }), 500, "internal_error");
      });
      expect(secrets.length).toBeGreaterThanOrEqual(14);
      for (const secret of secrets) expect(logs, "a secret or a body reached the logs").not.toContain(secret);
      // The capture works: the failure above was logged, by its door's name only.
      expect(logs).toContain("bad-answer-test");
    });
  },
  { neon: "errors: how each driver fails (an unreachable server, cut connections) and is told from a refusal" },
);
