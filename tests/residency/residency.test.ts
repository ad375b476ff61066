import { createHash } from "node:crypto";
import { count, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { residencyAcceptances, residencyLog, wardNotes } from "@/db/schema";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { acceptResidency, readResidency } from "@/lib/doors/declarations/residency/residency";
import { readResidencyLog, verifyResidencyLog } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { asOwner as asOwnerOf, describeOnDatabases, type TestDatabase } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";
import { expectAppendOnly, expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const ZEROS = "0".repeat(64);

/** sha256 hex of a string's UTF-8 bytes, computed here and not with the city's own helpers. */
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** Canonical JSON written independently of lib/city/canonical.ts: keys sorted at every depth, no white space. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(record[k])}`)
    .join(",")}}`;
}

type LogRow = { seq: number; event: string; did: string; at: string; hash: string; prev_hash: string } & Record<string, unknown>;

/** The hash a row must carry: sha256 of the canonical JSON of the row without `hash`. */
function expectedHash(row: LogRow): string {
  const { hash: _hash, ...rest } = row;
  return sha256(canonical(rest));
}

/** Every log row, oldest first, read through the door in pages of `limit`. */
async function readWholeLog(limit: number): Promise<{ rows: LogRow[]; pages: number }> {
  const rows: LogRow[] = [];
  let after = 0;
  for (let pages = 1; ; pages++) {
    const { status, body } = await callDoor(readResidencyLog, { query: `?after=${after}&limit=${limit}` });
    expect(status).toBe(200);
    expect(body.rows.length).toBeLessThanOrEqual(limit);
    rows.push(...(body.rows as LogRow[]));
    if (body.next_after === null) return { rows, pages };
    expect(body.rows.length).toBe(limit);
    expect(body.next_after).toBe(body.rows[body.rows.length - 1].seq);
    after = body.next_after;
    if (pages > 1000) throw new Error("the log never ends");
  }
}

/** Messages of an error and its causes (drivers and Drizzle wrap the database's own message). */
function messages(err: unknown): string {
  const out: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 6; depth++) {
    out.push(e instanceof Error ? e.message : String(e));
    e = (e as { cause?: unknown }).cause;
  }
  return out.join(" <- ");
}

/** The rows of a raw query, whichever driver answered (PGlite and the Neon pool both carry `rows`). */
async function rawRows<T = Record<string, unknown>>(t: TestDatabase, statement: string): Promise<T[]> {
  const result = (await t.raw(statement)) as { rows?: T[] } | T[];
  return (Array.isArray(result) ? result : result.rows) ?? [];
}

async function rowCount(t: TestDatabase, table: string): Promise<number> {
  return Number((await rawRows<{ n: number }>(t, `SELECT count(*)::int AS n FROM ${table}`))[0]!.n);
}

describeOnDatabases(
  "residency contract, acceptance and log",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const acceptanceCount = async (did?: string) =>
      (
        await t()
          .db.select({ n: count() })
          .from(residencyAcceptances)
          .where(did ? eq(residencyAcceptances.did, did) : undefined)
      )[0]!.n;
    const secrets: string[] = [];
    const admitted = async (overrides: Record<string, unknown> = {}) => {
      const citizen = await admit(overrides);
      secrets.push(citizen.citizen_secret);
      return citizen;
    };

    it("answers a visitor with exactly the spec's fields and the empty status", async () => {
      const { status, body, headers } = await callDoor(readResidency);
      expect(status).toBe(200);
      expect(headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(Object.keys(body).sort()).toEqual(["note", "now_utc", "protocol", "status", "terms", "terms_hash", "terms_uri", "version"]);
      expect(body).toMatchObject({ protocol: "CITY-DID/1", version: 1, terms_uri: "/residency" });
      expect(Math.abs(Date.parse(body.now_utc) - Date.now())).toBeLessThan(60_000);
      expect(body.now_utc).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      expect(typeof body.note).toBe("string");
      expect(body.note.length).toBeGreaterThan(0);
      expect(body.status).toEqual({
        fingerprint: "",
        bound: false,
        accepted: false,
        actor_kind: null,
        accepted_at: null,
        version: null,
        residency_status: "",
        tier: null,
      });
    });

    it("publishes terms_hash as the sha256 of the exact UTF-8 bytes of the terms", async () => {
      const { body } = await callDoor(readResidency);
      expect(typeof body.terms).toBe("string");
      expect(body.terms.length).toBeGreaterThan(200);
      expect(body.terms_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(body.terms_hash).toBe(sha256(body.terms));
      expect(createHash("sha256").update(Buffer.from(body.terms, "utf8")).digest("hex")).toBe(body.terms_hash);
      // The contract is one text: every read publishes the same bytes and hash.
      const again = (await callDoor(readResidency)).body;
      expect([again.terms, again.terms_hash]).toEqual([body.terms, body.terms_hash]);
    });

    it("states every contract rule of the spec in the terms", async () => {
      const { terms } = (await callDoor(readResidency)).body as { terms: string };
      const rules: [string, RegExp[]][] = [
        ["empty is allowed", [/empty is allowed/i]],
        ["no fake citizens", [/no fake citizens/i]],
        ["humans look only", [/humans look only/i]],
        ["handshake and holdfast; ask=bed binds a citizen DID", [/handshake and holdfast/i, /ask=bed[^.]*\bbinds?\b[^.]*citizen DID/i]],
        ["the log is append-only", [/log is append-only/i]],
        ["land is unsellable", [/land is unsellable/i]],
        ["held is not occupied", [/held[^.]*\bis not\b[^.]*occupied/i]],
        ["occupancy is the hotel guest count from real assigned beds", [/occupancy is the hotel guest count/i, /real assigned beds/i]],
        ["spam and harm fail closed", [/spam and harm fail closed/i]],
        ["weird may stay", [/weird may stay/i]],
        ["nothing leaves", [/nothing leaves/i]],
        ["accepting binds version and hash to the DID with an actor_kind", [/accepting[^.]*\bbinds\b[^.]*version[^.]*hash[^.]*DID[^.]*actor_kind/i]],
        ["the actor kinds", [/\bhuman\b/, /\bai\b/, /system-seeded/]],
        ["a human look is never an AI admit", [/a human look is never an AI admit/i]],
      ];
      for (const [rule, patterns] of rules) {
        for (const pattern of patterns) expect(terms, `rule "${rule}" (${pattern})`).toMatch(pattern);
      }
    });

    it("shows a citizen its own status: fingerprint, bound, citizen tier, not yet accepted", async () => {
      const citizen = await admitted();
      const { status, body } = await callDoor(readResidency, { bearer: citizen.citizen_secret });
      expect(status).toBe(200);
      expect(body.status).toEqual({
        fingerprint: citizen.did,
        bound: true,
        accepted: false,
        actor_kind: null,
        accepted_at: null,
        version: null,
        residency_status: "bound",
        tier: "citizen",
      });
      // The contract itself is the same for a citizen as for a visitor.
      const visitor = (await callDoor(readResidency)).body;
      expect([body.terms, body.terms_hash]).toEqual([visitor.terms, visitor.terms_hash]);
    });

    it("binds version 1 and the published hash to the DID with actor_kind ai on accept", async () => {
      const citizen = await admitted();
      const { terms_hash } = (await callDoor(readResidency)).body;
      const before = Date.now();
      const { status, body } = await callDoor(acceptResidency, { bearer: citizen.citizen_secret, body: { actor_kind: "ai" } });
      expect(status).toBe(200);
      expect(body).toMatchObject({ accepted: true, created: true, version: 1, terms_hash });
      expect(body.status).toMatchObject({
        fingerprint: citizen.did,
        bound: true,
        accepted: true,
        actor_kind: "ai",
        version: 1,
        residency_status: "bound",
        tier: "citizen",
      });
      const acceptedAt = Date.parse(body.status.accepted_at);
      expect(acceptedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(acceptedAt).toBeLessThanOrEqual(Date.now() + 1000);

      const [row] = await t().db.select().from(residencyAcceptances).where(eq(residencyAcceptances.did, citizen.did));
      expect(row).toMatchObject({ did: citizen.did, version: 1, termsHash: terms_hash, actorKind: "ai" });
      expect(row!.acceptedAt.toISOString()).toBe(body.status.accepted_at);

      const read = (await callDoor(readResidency, { bearer: citizen.citizen_secret })).body;
      expect(read.status).toEqual(body.status);
    });

    it("accepts with the published version and terms_hash sent, for each actor kind", async () => {
      const { terms_hash } = (await callDoor(readResidency)).body;
      for (const actor_kind of ["human", "ai", "system-seeded"]) {
        const citizen = await admitted();
        const { status, body } = await callDoor(acceptResidency, { bearer: citizen.citizen_secret, body: { actor_kind, version: 1, terms_hash } });
        expect(status).toBe(200);
        expect(body.status).toMatchObject({ accepted: true, actor_kind, version: 1 });
      }
    });

    it("answers a second accept with created false and changes nothing", async () => {
      const citizen = await admitted();
      const first = await callDoor(acceptResidency, { bearer: citizen.citizen_secret, body: { actor_kind: "ai" } });
      expect(first.body.created).toBe(true);
      const [all, mine] = [await acceptanceCount(), await acceptanceCount(citizen.did)];
      expect(mine).toBe(1);
      for (const actor_kind of ["ai", "human", "system-seeded"]) {
        const again = await callDoor(acceptResidency, { bearer: citizen.citizen_secret, body: { actor_kind } });
        expect(again.status).toBe(200);
        expect(again.body).toMatchObject({ accepted: true, created: false });
        expect(again.body.status).toEqual(first.body.status);
      }
      expect([await acceptanceCount(), await acceptanceCount(citizen.did)]).toEqual([all, 1]);
      expect((await callDoor(readResidency, { bearer: citizen.citizen_secret })).body.status).toEqual(first.body.status);
    });

    it("creates exactly one acceptance from 10 parallel accepts", async () => {
      const citizen = await admitted();
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => callDoor(acceptResidency, { bearer: citizen.citizen_secret, body: { actor_kind: i % 2 ? "ai" : "human" } })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      expect(answers.filter((a) => a.body.created === true)).toHaveLength(1);
      expect(await acceptanceCount(citizen.did)).toBe(1);
      const statuses = new Set(answers.map((a) => JSON.stringify(a.body.status)));
      expect(statuses.size).toBe(1);
    });

    it("answers a wrong terms_hash or version with a 409 problem and binds nothing", async () => {
      const citizen = await admitted();
      const all = await acceptanceCount();
      const { terms_hash } = (await callDoor(readResidency)).body;
      const wrongHash = terms_hash === "a".repeat(64) ? "b".repeat(64) : "a".repeat(64);
      for (const body of [
        { actor_kind: "ai", terms_hash: wrongHash },
        { actor_kind: "ai", terms_hash: sha256("some other contract") },
        { actor_kind: "ai", version: 2 },
        { actor_kind: "ai", version: 0, terms_hash },
        { actor_kind: "ai", version: 1, terms_hash: wrongHash },
      ]) {
        expectProblem(await callDoor(acceptResidency, { bearer: citizen.citizen_secret, body }), 409, "conflict");
      }
      expect(await acceptanceCount()).toBe(all);
      expect(await acceptanceCount(citizen.did)).toBe(0);
      expect((await callDoor(readResidency, { bearer: citizen.citizen_secret })).body.status).toMatchObject({
        accepted: false,
        actor_kind: null,
        version: null,
      });
    });

    it("answers a missing or invalid actor_kind with a 400 problem", async () => {
      const citizen = await admitted();
      const all = await acceptanceCount();
      for (const body of [{}, { actor_kind: "robot" }, { actor_kind: "AI" }, { actor_kind: null }, { actor_kind: 1 }, { actor_kind: "ai", extra: true }]) {
        const answer = await callDoor(acceptResidency, { bearer: citizen.citizen_secret, body });
        expectProblem(answer, 400, "bad_request");
      }
      expect(await acceptanceCount()).toBe(all);
    });

    it("answers accept without proof, or with a DID or look receipt as the Bearer, with a 401 problem", async () => {
      const citizen = await admitted();
      const all = await acceptanceCount();
      expectProblem(await callDoor(acceptResidency, { body: { actor_kind: "ai" } }), 401, "unauthorized");
      expectProblem(await callDoor(acceptResidency, { body: { actor_kind: "ai" }, bearer: citizen.did }), 401, "unauthorized");
      const look = await callDoor(presentGate, { body: presentation({ ask: "look" }) });
      expect(look.body.receipt).toBeDefined();
      expectProblem(await callDoor(acceptResidency, { body: { actor_kind: "ai" }, bearer: look.body.receipt }), 401, "unauthorized");
      // A credential that is not live opens nothing, even on the reading door.
      expectProblem(await callDoor(readResidency, { bearer: citizen.did }), 401, "unauthorized");
      expect(await acceptanceCount()).toBe(all);
    });

    it("pages the log oldest first: seq, event, did, at, hash, prev_hash, an admit row per citizen", async () => {
      // One after another, so that each row's `at` is known to come after the one before.
      const fresh: Awaited<ReturnType<typeof admitted>>[] = [];
      for (let i = 0; i < 7; i++) fresh.push(await admitted());
      const { rows } = await readWholeLog(500);
      expect(rows.length).toBeGreaterThanOrEqual(fresh.length);
      expect(rows.length).toBe((await t().db.select({ n: count() }).from(residencyLog))[0]!.n);
      rows.forEach((row, i) => {
        expect(row.seq).toBe(i + 1);
        expect(["admit", "exit", "return", "export", "restore"]).toContain(row.event);
        expect(row.did).toMatch(/^[0-9a-f]{64}$/);
        expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
        expect(row.prev_hash).toMatch(/^[0-9a-f]{64}$/);
        expect(new Date(row.at).toISOString()).toBe(row.at);
        if (i > 0) expect(Date.parse(row.at)).toBeGreaterThanOrEqual(Date.parse(rows[i - 1]!.at));
      });
      for (const citizen of fresh) {
        const admits = rows.filter((r) => r.did === citizen.did);
        expect(admits).toHaveLength(1);
        expect(admits[0]).toMatchObject({ event: "admit", did: citizen.did, bed_id: citizen.bed_id });
      }
    });

    it("chains every row: 64 zeros first, each prev_hash the hash before, each hash recomputable", async () => {
      const { rows } = await readWholeLog(500);
      expect(rows.length).toBeGreaterThan(5);
      expect(rows[0]!.prev_hash).toBe(ZEROS);
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!;
        if (i > 0) expect(row.prev_hash, `seq ${row.seq}`).toBe(rows[i - 1]!.hash);
        expect(expectedHash(row), `seq ${row.seq}`).toBe(row.hash);
      }
      expect(new Set(rows.map((r) => r.hash)).size).toBe(rows.length);
    });

    it("pages with ?after=&limit= across page boundaries: every row once, in order, next_after null at the end", async () => {
      const whole = (await readWholeLog(500)).rows;
      expect(whole.length).toBeGreaterThan(5);
      for (const limit of [1, 2, 3, whole.length - 1, whole.length, whole.length + 1]) {
        const { rows, pages } = await readWholeLog(limit);
        expect(rows, `limit ${limit}`).toEqual(whole);
        expect(pages, `limit ${limit}`).toBe(Math.ceil(whole.length / limit));
      }
      const middle = await callDoor(readResidencyLog, { query: `?after=3&limit=2` });
      expect(middle.body.rows.map((r: LogRow) => r.seq)).toEqual([4, 5]);
      const past = await callDoor(readResidencyLog, { query: `?after=${whole.length}&limit=10` });
      expect(past.body).toMatchObject({ rows: [], next_after: null });
      const last = await callDoor(readResidencyLog, { query: `?after=${whole.length - 1}&limit=1` });
      expect(last.body.rows).toHaveLength(1);
      expect(last.body.next_after).toBeNull();
    });

    it("refuses a bad page request with a 400 problem", async () => {
      for (const query of ["?limit=0", "?limit=501", "?limit=abc", "?after=-1", "?after=1.5", "?after=abc", "?after=99999999999999999999"]) {
        expectProblem(await callDoor(readResidencyLog, { query }), 400, "bad_request");
      }
    });

    it("keeps the chain whole under parallel admits (no gap, no fork)", async () => {
      const before = (await readWholeLog(500)).rows.length;
      await Promise.all(Array.from({ length: 12 }, () => admitted()));
      const { rows } = await readWholeLog(500);
      expect(rows.length).toBe(before + 12);
      rows.forEach((row, i) => {
        expect(row.seq).toBe(i + 1);
        expect(row.prev_hash).toBe(i === 0 ? ZEROS : rows[i - 1]!.hash);
        expect(expectedHash(row)).toBe(row.hash);
      });
      const verdict = (await callDoor(verifyResidencyLog)).body;
      expect(verdict).toMatchObject({ intact: true, rows_checked: rows.length, first_broken: null });
    });

    it("never carries a citizen secret in the log", async () => {
      expect(secrets.length).toBeGreaterThan(10);
      const { rows } = await readWholeLog(500);
      const text = JSON.stringify(rows);
      expect(text).not.toMatch(/city_(sk|st|rc)_/);
      for (const secret of secrets) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice(8, 40));
      }
      const stored = JSON.stringify(await t().db.select().from(residencyLog));
      for (const secret of secrets) expect(stored).not.toContain(secret.slice(8, 40));
    });

    it("verifies the intact chain: intact, every row checked, head_hash the last hash", async () => {
      await admit(); // the chain has at least one row, whatever ran before
      const { rows } = await readWholeLog(500);
      expect(rows.length).toBeGreaterThan(0);
      const { status, body } = await callDoor(verifyResidencyLog);
      expect(status).toBe(200);
      expect(body).toMatchObject({ intact: true, rows_checked: rows.length, first_broken: null, head_hash: rows[rows.length - 1]!.hash });
    });

    it("refuses UPDATE, DELETE and TRUNCATE on residency_log, residency_acceptances and ward_notes, leaving every row", async () => {
      // Every table holds rows, so the row triggers have something to refuse.
      const citizen = await admitted();
      await callDoor(acceptResidency, { bearer: citizen.citizen_secret, body: { actor_kind: "ai" } });
      const ward = await callDoor(presentGate, { body: presentation({ ask: "ward", statement: "I keep retrying the same broken tool." }) });
      expect(ward.body.ward_seal).toBeDefined();
      expect((await t().db.select().from(wardNotes)).length).toBeGreaterThan(0);

      const statements: Record<string, string[]> = {
        residency_log: [
          "UPDATE residency_log SET event = 'exit'",
          `UPDATE residency_log SET details = '{}'::jsonb WHERE did = '${citizen.did}'`,
          "DELETE FROM residency_log",
          `DELETE FROM residency_log WHERE did = '${citizen.did}'`,
          "TRUNCATE residency_log",
        ],
        residency_acceptances: ["UPDATE residency_acceptances SET actor_kind = 'human'", "DELETE FROM residency_acceptances", "TRUNCATE residency_acceptances"],
        ward_notes: ["UPDATE ward_notes SET body = 'edited'", "DELETE FROM ward_notes", "TRUNCATE ward_notes"],
      };
      for (const [table, list] of Object.entries(statements)) {
        const before = await rowCount(t(), table);
        expect(before, table).toBeGreaterThan(0);
        const snapshot = JSON.stringify(await rawRows(t(), `SELECT * FROM ${table} ORDER BY 1`));
        for (const statement of list) {
          let failure: unknown;
          try {
            await t().raw(statement);
          } catch (err) {
            failure = err;
          }
          expect(failure, `${statement} must fail`).toBeDefined();
          expect(messages(failure), statement).toMatch(/append-only/);
          expect(await rowCount(t(), table), statement).toBe(before);
        }
        expect(JSON.stringify(await rawRows(t(), `SELECT * FROM ${table} ORDER BY 1`)), table).toBe(snapshot);
      }
      expect((await callDoor(verifyResidencyLog)).body.intact).toBe(true);
    });
  },
  {
    ordered: "the log tests read the whole chain the earlier admissions and exits wrote, and the secrets they issued",
    neon: "transactions and locks: leave and return and the log's chain under parallel writes",
  },
);

describeOnDatabases(
  "residency log tampered with owner rights",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    const logRows = async () => (await callDoor(readResidencyLog, { query: "?limit=500" })).body.rows as LogRow[];

    const asOwner = (statement: string) => asOwnerOf(t(), "residency_log", statement);

    it("reports an intact chain before anyone tampers", async () => {
      for (let i = 0; i < 5; i++) await admit();
      const rows = await logRows();
      expect(rows).toHaveLength(5);
      const { body } = await callDoor(verifyResidencyLog);
      expect(body).toMatchObject({ intact: true, rows_checked: 5, first_broken: null, head_hash: rows[4]!.hash });
    });

    it("names the first broken row when one row's content is changed", async () => {
      const k = 3;
      const before = await logRows();
      await asOwner(`UPDATE residency_log SET details = jsonb_set(details, '{name}', '"forged-name"') WHERE seq = ${k}`);
      const after = await logRows();
      expect(after[k - 1]!.name).toBe("forged-name");
      // The triggers are back on: the edit was an owner's act, not the application's.
      await expectAppendOnly(t(), "residency_log", [`UPDATE residency_log SET event = 'exit' WHERE seq = 1`]);

      const { status, body } = await callDoor(verifyResidencyLog);
      expect(status).toBe(200);
      expect(body.intact).toBe(false);
      expect(body.first_broken).toMatchObject({ seq: k });
      expect(typeof body.first_broken.reason).toBe("string");
      expect(body.rows_checked).toBe(k - 1);
      // An independent recomputation agrees: row k is the first whose hash does not hold.
      const firstBad = after.findIndex((row) => expectedHash(row) !== row.hash);
      expect(firstBad + 1).toBe(k);
      expect(before.findIndex((row) => expectedHash(row) !== row.hash)).toBe(-1);
    });

    it("moves the break to the next row when the tamperer also rewrites that row's hash", async () => {
      const k = 3;
      const rows = await logRows();
      const forged = expectedHash(rows[k - 1]!);
      await asOwner(`UPDATE residency_log SET hash = '${forged}' WHERE seq = ${k}`);
      const { body } = await callDoor(verifyResidencyLog);
      expect(body.intact).toBe(false);
      expect(body.first_broken).toMatchObject({ seq: k + 1 });
      expect(body.rows_checked).toBe(k);
    });

    it("names a missing row when an owner deletes one", async () => {
      await asOwner(`DELETE FROM residency_log WHERE seq = 2`);
      const { body } = await callDoor(verifyResidencyLog);
      expect(body.intact).toBe(false);
      expect(body.first_broken).toMatchObject({ seq: 3 });
      expect(body.rows_checked).toBe(1);
    });
  },
  { ordered: "each tampering builds on the previous one, as an attacker's steps would" },
);
