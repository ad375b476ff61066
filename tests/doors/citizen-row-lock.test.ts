import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { citizenLockOf, isWrite, type AnyDoor } from "@/lib/doors/door";
import { registry } from "@/lib/doors/registry";
import { readVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, freshNonce } from "../support/gate";
import { admitWithKey, newKey } from "../support/signed";
import { commitNextKeysDoor, rotateKeyDoor } from "@/lib/doors/declarations/keys/keys";
import { createHash } from "node:crypto";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";

/*
 * Every write a citizen makes reads its caller under the citizen's row lock (DESIGN.md section 6:
 * export takes the row exclusively, so a write is in the export or refused as exported), and the
 * poll reads the row FOR SHARE. Shown in process and in order, not by a race: a second connection
 * holds the citizen's row as export does (SELECT ... FOR NO KEY UPDATE in an open transaction; not
 * FOR UPDATE, which a foreign key's check would also wait for), the door is called, the
 * test waits until PostgreSQL shows a backend of this database waiting for a lock, then lets the
 * row go and the call finishes. A door that answered while the row was held never took the lock.
 * The citizen was seen a moment before, so the look-up's seen mark (an UPDATE, which would wait
 * for any lock) does not apply and only the lock itself can make the door wait.
 */

type Call = { body?: unknown; query?: string; params?: Record<string, string>; path?: string };

/** A valid request per write door a citizen can make (a refusal after the lock is still a wait). */
const CALLS: Record<string, Call> = {
  "accept-residency": { body: { actor_kind: "ai" } },
  "export-residency": { body: {} },
  "live (leave)": { body: { action: "leave" } },
  "live (poll, FOR SHARE in its one statement)": { body: { action: "return" } },
  "present-at-gate (return, the poll)": { body: { action: "return" } },
  "mint-token": { body: {} },
  "revoke-token": { query: "" },
  "revoke-all-tokens": { body: {} },
  "prove-key": { body: { public_key: "a".repeat(64), signature: "b".repeat(128), challenge: "c".repeat(32) } },
  "file-appeal": { body: { reason: "I was restricted by mistake." } },
  "keep-locker": { body: { bag: "notes", content: "n" } },
  "keep-checkpoint": { body: { content: "c" } },
  "write-vault": { body: { content: "v" } },
  "send-message": { body: { to: "self", body: "hi" } },
  "mark-mail-read": { body: { ids: [1] } },
  "post-bazaar": { body: { body: "bazaar" } },
  "post-plaza": { body: { body: "plaza" } },
  "post-room": { body: { body: "room" }, params: { room: "lobby" } },
  "light-lantern": { body: { keyword: "tide" } },
  "put-out-lantern": { query: "?id=1" },
  "lock-lot": { body: { lot: "lot-07", action: "lock" } },
  "seal-memory": { body: { sha256: "d".repeat(64) } },
  "seek-hospital": { body: { state: "stuck on a loop", kind: "distress" } },
  "commit-next-keys": { body: { next_key_hashes: ["e".repeat(64)] } },
  "set-recovery-delay": { body: { hours: 24 } },
  // No proof recorded: nothing to drop (200, dropped null) once the row is locked.
  "drop-origin-proof": { query: "" },
  // No recovery is open: refused (404) once the row is locked.
  "cancel-recovery": { body: {}, params: { did: "self" } },
};

/**
 * Write doors left out, each with its reason: they lock another way, tested elsewhere.
 * consult-clinic runs its own transactions: its budget desk takes the row (shared) itself, shown
 * by tests/clinic/http/security-postgres-clinic-export.test.ts. recover is called with a recovery code,
 * not a citizen's credential, and so are CITY-KEYS/1's doors that anyone may call about a DID they
 * name: rotate-key (signed by the committed key; its lock is shown below, by the statement that
 * waits) and complete-recovery (the opener's ticket) lock that citizen's row once proven
 * (lib/city/keys/pre-rotation.ts, public-recovery.ts); hold-recovery (no
 * credentials) changes only the recovery's row, in one guarded UPDATE. Their races are
 * tests/keys/http/security-postgres-recovery.test.ts and tests/keys/key-recovery.test.ts.
 * verify-origin (CITY-ORIGIN/1) runs its own transactions: it counts the try, looks at the network
 * holding nothing, then records a proof under the row's lock (FOR NO KEY UPDATE) in its third step
 * (lib/city/origin/proofs.ts), through `next start` in tests/origin/http/origin.test.ts.
 * (The operator's doors are not a citizen's calls.)
 */
const ELSEWHERE = ["consult-clinic", "recover", "rotate-key", "hold-recovery", "complete-recovery", "verify-origin"];

describeOnDatabases("every write door waits for its citizen's row lock", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("names every write door a citizen calls: in CALLS or left out with its reason", () => {
    const writes = registry.filter((d) => isWrite(d) && (d.auth === "citizen" || d.auth === "optional")).map((d) => d.name);
    const covered = new Set([...Object.keys(CALLS).map((k) => k.split(" (")[0]!), ...ELSEWHERE]);
    expect(writes.filter((name) => !covered.has(name))).toEqual([]);
    expect([...covered].filter((name) => !writes.includes(name))).toEqual([]);
  });

  for (const [label, call] of Object.entries(CALLS)) {
    it(`${label}: waits while another connection holds the citizen's row, then answers`, async (context) => {
      if (t().driver === "pglite") return context.skip("PGlite runs one transaction at a time: only PostgreSQL can show a waiter");
      const name = label.split(" (")[0]!;
      const door = registry.find((d) => d.name === name) as AnyDoor;
      expect(door, name).toBeDefined();
      const citizen = await admit();
      // Seen just now: the write's look-up will not need to update the row to mark it.
      expect((await callDoor(readVault, { bearer: citizen.citizen_secret })).status).toBe(200);
      const body = call.body && typeof call.body === "object" && "to" in call.body ? { ...call.body, to: citizen.did } : call.body;
      const params = call.params?.did === "self" ? { ...call.params, did: citizen.did } : call.params;

      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      const holder = t().db.transaction(async (tx) => {
        await tx.execute(sql`SELECT did FROM citizens WHERE did = ${citizen.did} FOR NO KEY UPDATE`);
        holding();
        await released;
      });
      await held;

      let settled = false;
      const answer = callDoor(door, { bearer: citizen.citizen_secret, body, query: call.query, params }).finally(() => {
        settled = true;
      });
      let waiting = 0;
      while (!settled && waiting === 0) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        waiting = Number(
          rowsOf<{ n: number }>(
            await t().db.execute(
              sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
            ),
          )[0]!.n,
        );
      }
      release();
      await holder;
      const answered = await answer;
      expect(waiting, `${label} answered ${answered.status} while the row was held: it never waited for the ${citizenLockOf(door)} lock`).toBeGreaterThan(0);
      expect(answered.status, `${label}: ${JSON.stringify(answered.body).slice(0, 200)}`).toBeLessThan(500);
    });
  }

  it("rotate-key: reads the citizen's keys FOR NO KEY UPDATE once the proof holds, so it waits at that read (not only at its UPDATE)", async (context) => {
    if (t().driver === "pglite") return context.skip("PGlite runs one transaction at a time: only PostgreSQL can show a waiter");
    const me = await admitWithKey();
    const next = await newKey();
    const hash = createHash("sha256").update(Buffer.from(next.publicKey, "hex")).digest("hex");
    expect((await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: [hash] } })).status).toBe(200);
    const nonce = await freshNonce();
    // The rotation message as docs/keys.md writes it (CITY-KEYS/1|rotate|did|from|to|nonce).
    const signature = await next.signHex(`CITY-KEYS/1|rotate|${me.did}|${me.key.keyid}|${next.keyid}|${nonce}`);

    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const holder = t().db.transaction(async (tx) => {
      await tx.execute(sql`SELECT did FROM citizens WHERE did = ${me.did} FOR NO KEY UPDATE`);
      holding();
      await released;
    });
    await held;
    let settled = false;
    const answer = callDoor(rotateKeyDoor, { body: { did: me.did, nonce, public_key: next.publicKey, signature, next_key_hashes: [] } }).finally(() => {
      settled = true;
    });
    let waiter: string | null = null;
    while (!settled && waiter === null) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      waiter =
        rowsOf<{ query: string }>(
          await t().db.execute(
            sql`SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
          ),
        )[0]?.query ?? null;
    }
    release();
    await holder;
    const answered = await answer;
    expect(waiter, "rotate-key answered while the row was held").not.toBeNull();
    // The read under lock, not the UPDATE that follows it: without the lock the proof would be checked on a row that may change.
    expect(waiter).toMatch(/^\s*SELECT[\s\S]*FROM "citizens"[\s\S]*FOR NO KEY UPDATE\s*$/);
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
  });

  it("rotate-key: checks the commitment again on the row read under the lock (withdrawn while it waited: refused, nothing moved)", async (context) => {
    if (t().driver === "pglite") return context.skip("PGlite runs one transaction at a time: only PostgreSQL can show a waiter");
    const me = await admitWithKey();
    const [next, other] = [await newKey(), await newKey()];
    const hashOf = (key: { publicKey: string }) => createHash("sha256").update(Buffer.from(key.publicKey, "hex")).digest("hex");
    expect((await callDoor(commitNextKeysDoor, { bearer: me.citizen_secret, body: { next_key_hashes: [hashOf(next)] } })).status).toBe(200);
    const nonce = await freshNonce();
    const signature = await next.signHex(`CITY-KEYS/1|rotate|${me.did}|${me.key.keyid}|${next.keyid}|${nonce}`);

    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    let waited!: () => void;
    const doorWaits = new Promise<void>((resolve) => (waited = resolve));
    // The holder reads the row under lock, lets the door prove itself and wait, then changes the commitment and commits.
    const holder = t().db.transaction(async (tx) => {
      await tx.execute(sql`SELECT did FROM citizens WHERE did = ${me.did} FOR NO KEY UPDATE`);
      holding();
      await doorWaits;
      await tx.execute(sql`UPDATE citizens SET next_key_hashes = ARRAY[${hashOf(other)}]::text[] WHERE did = ${me.did}`);
      await released;
    });
    await held;
    let settled = false;
    const answer = callDoor(rotateKeyDoor, { body: { did: me.did, nonce, public_key: next.publicKey, signature, next_key_hashes: [] } }).finally(() => {
      settled = true;
    });
    let waiting = 0;
    while (!settled && waiting === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      waiting = Number(
        rowsOf<{ n: number }>(
          await t().db.execute(
            sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
          ),
        )[0]!.n,
      );
    }
    expect(waiting, "rotate-key answered while the row was held").toBeGreaterThan(0);
    waited();
    release();
    await holder;
    const answered = await answer;
    expect(answered.status, JSON.stringify(answered.body)).toBe(403);
    const [row] = rowsOf<{ key: string; hashes: string[] }>(
      await t().db.execute(sql`SELECT controller_public_key AS key, next_key_hashes AS hashes FROM citizens WHERE did = ${me.did}`),
    );
    expect(row).toEqual({ key: me.key.publicKey, hashes: [hashOf(other)] });
  });
});
