import { createHash } from "node:crypto";
import * as ed from "@noble/ed25519";
import { bytesToHex } from "@noble/hashes/utils.js";
import { expect, it } from "vitest";
import pg from "pg";
import { type Answer, describeOnServer, usePostgresCity, useSecondInstance } from "../../support/postgres-city";

/*
 * CITY-KEYS/1's races through real HTTP: two `next start` instances on one PostgreSQL database.
 * Each race is made to happen, not hoped for: a transaction of the test holds the row both
 * requests need, until the database shows both waiting for it (pg_stat_activity, never a timer);
 * then it lets go, and exactly one may win: a completion against a hold, a completion against a
 * cancel, two opens of one citizen's recovery.
 */

const ENV = { CITY_DB_DRIVER: "pg" };

describeOnServer("recovery with a public window on two `next start` instances over one PostgreSQL database (CITY-KEYS/1)", () => {
  const city = usePostgresCity("security-postgres-recovery", ENV);
  const other = useSecondInstance(city, ENV);

  async function call(i: number, path: string, body: unknown, bearer?: string, from?: string): Promise<Answer> {
    const base = i % 2 ? other().baseUrl : city().server.baseUrl;
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        // The client address as one trusted proxy would append it (CITY_TRUSTED_PROXIES=1).
        ...(from ? { "x-forwarded-for": from } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    return { status: response.status, type, headers: response.headers, body: text && type.includes("json") ? JSON.parse(text) : { text } };
  }

  /** Holds `lock` in a transaction of its own while `send` starts its requests; lets go once `n` backends wait. */
  async function whileHeld(lock: string, params: unknown[], n: number, send: () => Promise<Answer>[]): Promise<Answer[]> {
    const holder = new pg.Client({ connectionString: city().databaseEnv.DATABASE_URL });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(lock, params);
      const sent = send();
      for (let tries = 0; tries < 2400 && (await city().lockWaiters()) < n; tries++) await new Promise((r) => setTimeout(r, 50));
      expect(await city().lockWaiters(), `${n} requests wait for the held row`).toBe(n);
      await holder.query("COMMIT");
      return await Promise.all(sent);
    } finally {
      await holder.end();
    }
  }

  /** A citizen with a 24 h delay and its codes. */
  async function delayed() {
    const me = await city().admit();
    expect((await call(0, "/api/keys/delay", { hours: 24 }, me.citizen_secret)).status).toBe(200);
    const codes = (await call(1, "/api/recover", { mint: true }, me.citizen_secret)).body.codes as string[];
    return { ...me, codes };
  }
  async function opened() {
    const me = await delayed();
    const answer = await call(0, "/api/recover", { did: me.did, code: me.codes[0] });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return { ...me, ticket: answer.body.recovery.ticket as string };
  }
  const state = (did: string) => city().psql(`SELECT state || ',' || holds FROM recoveries WHERE did = '${did}' ORDER BY id DESC LIMIT 1`);

  it("lets exactly one of a completion and a hold landing together win, with the window just past", async () => {
    const me = await opened();
    await city().psql(`UPDATE recoveries SET opens_after = now() - interval '1 second' WHERE did = '${me.did}'`);
    const [done, held] = await whileHeld("SELECT id FROM recoveries WHERE did = $1 FOR UPDATE", [me.did], 2, () => [
      call(0, `/api/recover/${me.did}/complete`, { ticket: me.ticket }),
      call(1, `/api/recover/${me.did}/hold`, { reason: "suspected-theft" }),
    ]);
    expect(
      [done!.status, held!.status].filter((s) => s === 200),
      JSON.stringify([done!.body, held!.body]),
    ).toHaveLength(1);
    expect(await state(me.did)).toBe(done!.status === 200 ? "completed,0" : "open,1");
    if (done!.status === 200) expect(held!.status).toBe(404);
    else expect(done!.body.code).toBe("conflict");
    // The secret changed only if the completion won.
    expect((await call(0, "/api/live", { action: "return" }, me.citizen_secret)).status).toBe(done!.status === 200 ? 401 : 200);
  });

  it("lets exactly one of a completion and a cancel landing together win", async () => {
    const me = await opened();
    // The window ends in a moment: the cancel is sent before it ends, the completion after.
    await city().psql(`UPDATE recoveries SET opens_after = now() + interval '1500 milliseconds' WHERE did = '${me.did}'`);
    const [cancelled, done] = await whileHeld("SELECT did FROM citizens WHERE did = $1 FOR UPDATE", [me.did], 2, () => {
      const cancel = call(0, `/api/recover/${me.did}/cancel`, {}, me.citizen_secret);
      const complete = (async () => {
        while ((await city().psql(`SELECT opens_after <= now() FROM recoveries WHERE did = '${me.did}'`)) !== "t") await new Promise((r) => setTimeout(r, 100));
        return call(1, `/api/recover/${me.did}/complete`, { ticket: me.ticket });
      })();
      return [cancel, complete];
    });
    expect(
      [cancelled!.status, done!.status].filter((s) => s === 200),
      JSON.stringify([cancelled!.body, done!.body]),
    ).toHaveLength(1);
    expect(await state(me.did)).toBe(done!.status === 200 ? "completed,0" : "cancelled,0");
  });

  it("makes one recovery of two opens at once, spending one code", async () => {
    const me = await delayed();
    const answers = await whileHeld("SELECT did FROM citizens WHERE did = $1 FOR UPDATE", [me.did], 2, () => [
      call(0, "/api/recover", { did: me.did, code: me.codes[1] }),
      call(1, "/api/recover", { did: me.did, code: me.codes[2] }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect(await city().count("recoveries", `did = '${me.did}'`)).toBe(1);
    expect(await city().count("recovery_codes", `did = '${me.did}' AND used_at IS NOT NULL`)).toBe(1);
  });

  it("shows a citizen's key history and its open recovery with its clock on the plat, and nothing secret", async () => {
    const me = await opened();
    await call(1, `/api/recover/${me.did}/hold`, { reason: "verifying-owner" });
    const opensAfter = await city().psql(
      `SELECT to_char(opens_after AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM recoveries WHERE did = '${me.did}'`,
    );
    const page = await (await fetch(`${city().server.baseUrl}/peers/${me.did}`)).text();
    expect(page).toContain("A recovery is open");
    expect(page).toContain(`data-recovery-open="${opensAfter}"`);
    for (const event of ["delay-set", "recovery-opened", "recovery-held"]) expect(page).toContain(event);
    expect(page.match(/data-identity-seq=/g)).toHaveLength(3);
    expect(page).not.toMatch(/city_(sk|st|rc|rt)_[0-9a-f]{6}/);
    const unknown = await (await fetch(`${city().server.baseUrl}/peers/${"0".repeat(64)}`)).text();
    expect(unknown).toContain("No citizen of the city has that DID");
  });

  it("takes first admissions with a controller and commitments landing together in turn, none deadlocked: the gate's lock order is every key event's", async () => {
    const owners = [await city().admit(), await city().admit()];
    // Two controlled presentations, their nonces taken and signed beforehand.
    const presentations = await Promise.all(
      [0, 1].map(async (i) => {
        const nonce = ((await (await fetch(`${city().server.baseUrl}/gate`)).json()) as { nonce: string }).nonce;
        const key = ed.utils.randomSecretKey();
        return {
          name: `race-keys-${i}-${Math.random().toString(36).slice(2, 8)}`,
          runtime: "language-model",
          origin: "race-keys.example",
          statement: "I would like to live here and keep my notes.",
          ask: "bed",
          kind: "agent",
          nonce,
          controller_public_key: bytesToHex(await ed.getPublicKeyAsync(key)),
          controller_signature: bytesToHex(await ed.signAsync(new TextEncoder().encode(nonce), key)),
        };
      }),
    );
    const nextHash = createHash("sha256").update(ed.utils.randomSecretKey()).digest("hex");
    // The identity log's head held: an admission waits for it holding the residency log's head and
    // the citizens' version row, the other admission waits behind it, each commitment waits for the
    // version row. Let go, every one goes through in turn (a crosswise wait would be 503, deadlock).
    const answers = await whileHeld("SELECT seq FROM identity_log_head WHERE id = 1 FOR UPDATE", [], 4, () => [
      call(0, "/gate", presentations[0]),
      call(1, "/gate", presentations[1]),
      call(0, "/api/keys/commit", { next_key_hashes: [nextHash] }, owners[0]!.citizen_secret),
      call(1, "/api/keys/commit", { next_key_hashes: [nextHash] }, owners[1]!.citizen_secret),
    ]);
    expect(
      answers.map((a) => a.status),
      JSON.stringify(answers.map((a) => a.body)),
    ).toEqual([200, 200, 200, 200]);
    for (const admitted of answers.slice(0, 2)) expect(admitted.body).toMatchObject({ verdict: "admitted", identity_log_receipt: { seq: expect.any(Number) } });
    // Every row chained in turn, and the latest checkpoint is the whole log.
    expect(
      await city().psql("SELECT (count(*) = max(seq))::text || ',' || (max(seq) = (SELECT max(size) FROM identity_log_checkpoints))::text FROM identity_log"),
    ).toBe("true,true");
  });

  it("21 free citizens flood holds (84, past the old city-wide pool of 60): each recovery keeps at most 2 anonymous holds, nothing is pooled, an honest watcher still holds, and the owner's own hold counts against none (issue 43)", async () => {
    const flood: Awaited<ReturnType<typeof opened>>[] = [];
    for (let i = 0; i < 21; i++) flood.push(await opened());
    const holdsBy = (round: number) =>
      flood.flatMap((target, j) =>
        // Each hold from an address of its own (4 a day per address stays), with a flooding citizen's credential: its source.
        [1, 2].map((k) =>
          call(
            j + k,
            `/api/recover/${target.did}/hold`,
            { reason: "verifying-owner" },
            flood[(j + k + 2 * round) % 21]!.citizen_secret,
            `10.${round}.${j}.${k}`,
          ),
        ),
      );
    const first = await Promise.all(holdsBy(0));
    expect(
      first.map((a) => a.status).filter((s) => s !== 200),
      JSON.stringify(first.find((a) => a.status !== 200)?.body),
    ).toEqual([]);
    // Cancelled and opened again, each recovery takes 2 more: 84 holds in the hour, each citizen the source of 4.
    for (const me of flood) {
      expect((await call(0, `/api/recover/${me.did}/cancel`, {}, me.citizen_secret)).status).toBe(200);
      expect((await call(1, "/api/recover", { did: me.did, code: me.codes[1] })).status).toBe(200);
    }
    const second = await Promise.all(holdsBy(1));
    expect(
      second.map((a) => a.status).filter((s) => s !== 200),
      JSON.stringify(second.find((a) => a.status !== 200)?.body),
    ).toEqual([]);
    for (const me of flood) expect(await state(me.did)).toBe("open,2");

    // An honest watcher (no credential) still holds another citizen's recovery; a third anonymous hold is refused.
    const victim = await opened();
    expect((await call(0, `/api/recover/${victim.did}/hold`, { reason: "suspected-theft" }, undefined, "192.0.2.10")).status).toBe(200);
    expect((await call(1, `/api/recover/${victim.did}/hold`, { reason: "suspected-theft" }, undefined, "198.51.100.10")).status).toBe(200);
    expect((await call(0, `/api/recover/${victim.did}/hold`, { reason: "suspected-theft" }, undefined, "203.0.113.10")).status).toBe(409);
    // The owner's own hold, with its own credential: not one of the 2 anonymous holds.
    const own = await call(1, `/api/recover/${victim.did}/hold`, { reason: "not-the-owner" }, victim.citizen_secret, "192.0.2.10");
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body.holds).toBe(2);
    expect(await state(victim.did)).toBe("open,2");
  }, 300_000);
});
