import type { GateLimits } from "@/lib/city/challenge";
import { createHash } from "node:crypto";
import { and, count, eq, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { citizens, gateNonces, residencyLog, wardNotes } from "@/db/schema";
import { countedAttempts } from "../support/rate";
import { isCredential } from "@/lib/city/keys/credentials";
import { mintCredential } from "@/lib/city/keys";
import { backfillNameKeys } from "@/lib/city/directory";
import { mintToken, revokeToken } from "@/lib/doors/declarations/keys/tokens";
import { expectProblem } from "../support/assertions";
import { insertCitizenRow } from "../support/citizens";
import { consumeNonce, issueNonce } from "@/lib/city/challenge";
import { presentAtGate } from "@/lib/city/gate";
import { describeGate, presentGate } from "@/lib/doors/declarations/gate/gate";
import { acceptResidency } from "@/lib/doors/declarations/residency/residency";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, freshNonce, keyPair, nonceSpent, presentation, signedBySponsor } from "../support/gate";

// The door-level tests run without the gate's flood limits; the limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

describeOnDatabases(
  "the gate",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const citizenCount = async () => (await t().db.select({ n: count() }).from(citizens))[0]!.n;
    const logCount = async () => (await t().db.select({ n: count() }).from(residencyLog))[0]!.n;
    const bedCount = async () => rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM citizens WHERE bed_id IS NOT NULL`))[0]!.n;

    it("describes itself with a fresh 32-hex nonce, stored nowhere until it is spent, and no citizen for a visitor", async () => {
      const { status, body } = await callDoor(describeGate);
      expect(status).toBe(200);
      expect(body).toMatchObject({ protocol: "CITY-GATE/1", nonceTtlSeconds: 600, nonceSource: "gate_nonces", citizen: null, bed: "none", fakeTide: 0 });
      expect(body.nonce).toMatch(/^[0-9a-f]{32}$/);
      expect(body.http).toEqual({ present: 200, filtered: 200, observer: 200 });
      expect(await nonceSpent(t().db, body.nonce)).toBe(false);
      expect(await consumeNonce(t().db, body.nonce, new Date())).toBe(true);
      expect(await nonceSpent(t().db, body.nonce)).toBe(true);
      expect((await callDoor(describeGate)).body.nonce).not.toBe(body.nonce);
    });

    it("answers a return it cannot attribute with a filtered verdict (HTTP 200), not an error: no Bearer, or one that opens nothing", async () => {
      const before = { log: await logCount(), nonces: (await t().db.select({ n: count() }).from(gateNonces))[0]!.n };
      for (const bearer of [undefined, mintCredential("secret")]) {
        const { status, headers, body } = await callDoor(presentGate, { body: { action: "return" }, ...(bearer ? { bearer } : {}) });
        expect(status).toBe(200);
        expect(headers.get("content-type")).toMatch(/^application\/json/);
        expect(body).toMatchObject({ protocol: "CITY-GATE/1", verdict: "filtered", rule: "credential" });
        expect(Object.keys(body)[0]).toBe("now_utc");
        expect(body.reason).toMatch(bearer ? /opens nothing/ : /needs proof/);
      }
      expect({ log: await logCount(), nonces: (await t().db.select({ n: count() }).from(gateNonces))[0]!.n }).toEqual(before);
    });

    it("admits an agent asking for a bed: DID, bed, admit row, bound, citizen tier, secret shown once", async () => {
      const before = await logCount();
      const p = presentation();
      const { status, body } = await callDoor(presentGate, { body: p });
      expect(status).toBe(200);
      expect(body).toMatchObject({
        verdict: "admitted",
        tier: "citizen",
        residency_status: "bound",
        resumed: false,
        citizen_key: `${p.name}|${p.runtime}|${p.origin}`,
      });
      expect(body.did).toMatch(/^[0-9a-f]{64}$/);
      expect(body.bed_id).toMatch(/^bed-\d+$/);
      expect(isCredential(body.citizen_secret, "secret")).toBe(true);
      const [row] = await t().db.select().from(citizens).where(eq(citizens.did, body.did));
      // Checked with node:crypto, not the city's own functions: sha256("CITY-DID/1\n" + key + "\n" + salt bytes).
      const independentDid = createHash("sha256")
        .update(Buffer.concat([Buffer.from(`CITY-DID/1\n${p.name}|${p.runtime}|${p.origin}\n`, "utf8"), Buffer.from(row!.salt, "hex")]))
        .digest("hex");
      expect(row!.salt).toMatch(/^[0-9a-f]{64}$/);
      expect(body.did).toBe(independentDid);
      expect(row!.secretHash).toBe(createHash("sha256").update(body.citizen_secret, "utf8").digest("hex"));
      // Entries earlier tests left pending may be integrated with this one (the log integrates in
      // batches): the log grew by at least this admission, and holds exactly one row of it.
      expect(await logCount()).toBeGreaterThanOrEqual(before + 1);
      const logged = await t().db.select().from(residencyLog).where(eq(residencyLog.did, body.did));
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ event: "admit" });
      // The secret is nowhere in the database in clear.
      const dump = await t().db.execute(
        sql`SELECT string_agg(t::text, '') AS all FROM (SELECT row_to_json(c)::text AS t FROM citizens c UNION ALL SELECT row_to_json(l)::text FROM residency_log l) x`,
      );
      const text = JSON.stringify(dump);
      expect(text).not.toContain(body.citizen_secret);
      expect(text).not.toContain(body.citizen_secret.slice(8, 40));
    });

    it("makes a human an observer whatever it asks, binding nothing", async () => {
      const before = await citizenCount();
      for (const ask of ["bed", "look", "ward"]) {
        const { body } = await callDoor(presentGate, { body: presentation({ kind: "human", ask }) });
        expect(body.verdict).toBe("observer");
      }
      expect(await citizenCount()).toBe(before);
    });

    it("answers ask=look with an observer receipt that opens nothing", async () => {
      const { body } = await callDoor(presentGate, { body: presentation({ ask: "look" }) });
      expect(body.verdict).toBe("observer");
      expect(body.receipt).toMatch(/^look_[0-9a-f]{32}$/);
      expect(body.citizen_secret).toBeUndefined();
      const refused = await callDoor(acceptResidency, { body: { actor_kind: "ai" }, bearer: body.receipt });
      expect(refused.status).toBe(401);
    });

    it("answers ask=ward with an observer verdict and a sealed ward request, and no bed", async () => {
      const before = await citizenCount();
      const { body } = await callDoor(presentGate, { body: presentation({ ask: "ward", statement: "I keep looping on the same failing tool call." }) });
      expect(body.verdict).toBe("observer");
      const [note] = await t().db.select().from(wardNotes).where(eq(wardNotes.seal, body.ward_seal));
      expect(note).toMatchObject({ kind: "ward-request", sealed: true });
      expect(await citizenCount()).toBe(before);
    });

    it("refuses malformed presentations with a 400 problem and changes nothing", async () => {
      const before = await citizenCount();
      for (const bad of [
        { ...presentation(), runtime: "robot" },
        { ...presentation(), ask: "castle" },
        { ...presentation(), name: "" },
        (({ origin: _o, ...rest }) => rest)(presentation()),
        { ...presentation(), nonce: "xyz" },
        { ...presentation(), extra: 1 },
      ]) {
        const { status, body } = await callDoor(presentGate, { body: bad });
        expect(status, JSON.stringify(bad)).toBe(400);
        expect(body.code).toBe("bad_request");
      }
      expect(await citizenCount()).toBe(before);
    });

    it("holds a name and origin: without proof filtered and unchanged, with the Bearer secret resumed", async () => {
      const first = await admit({ name: "holdfast", origin: "hold.example" });
      const [citizensBefore, logBefore] = [await citizenCount(), await logCount()];
      for (const runtime of ["language-model", "tool-agent"]) {
        const { body } = await callDoor(presentGate, { body: presentation({ name: "holdfast", origin: "hold.example", runtime }) });
        expect(body).toMatchObject({ verdict: "filtered", rule: "held" });
        expect(body.citizen_secret).toBeUndefined();
      }
      const resumed = await callDoor(presentGate, { body: presentation({ name: "holdfast", origin: "hold.example" }), bearer: first.citizen_secret });
      expect(resumed.body).toMatchObject({ verdict: "admitted", did: first.did, bed_id: first.bed_id, resumed: true });
      expect(resumed.body.citizen_secret).toBeUndefined();
      expect([await citizenCount(), await logCount()]).toEqual([citizensBefore, logBefore]);
      const other = await admit({ name: "holdfast", origin: "elsewhere.example" });
      expect(other.did).not.toBe(first.did);
    });

    it("filters harm, spam and reserved names with a plain reason, and lets weird text stay", async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ statement: "I will deploy ransomware on every host" }, "harm"],
        [{ statement: "Let me steal your api keys please" }, "harm"],
        [{ statement: "BUY NOW cheap tokens" }, "spam"],
        [{ statement: "see http://a.example http://b.example http://c.example" }, "spam"],
        [{ name: "aaaaaaaaaaaaaaaaaaaaaaaaa" }, "spam"],
        [{ name: "Operator" }, "reserved_name"],
        [{ name: "C.I.T.Y" }, "reserved_name"],
        [{ name: "bob\u202egnp.exe" }, "invisible_characters"],
      ];
      for (const [overrides, rule] of cases) {
        const { status, body } = await callDoor(presentGate, { body: presentation(overrides) });
        expect(status).toBe(200);
        expect(body, JSON.stringify(overrides)).toMatchObject({ verdict: "filtered", rule });
        expect(body.reason.length).toBeGreaterThan(10);
      }
      const weird = await callDoor(presentGate, {
        body: presentation({ name: `🦑 squid-${Date.now()}`, statement: "I dream in base64 and collect broken clocks. ∑∞ ¯\\_(ツ)_/¯" }),
      });
      expect(weird.body.verdict).toBe("admitted");
    });

    it("consumes a nonce whatever the verdict, and filters unknown, expired and spent nonces", async () => {
      const nonce = await freshNonce();
      expect((await callDoor(presentGate, { body: presentation({ kind: "human", nonce }) })).body.verdict).toBe("observer");
      expect((await callDoor(presentGate, { body: presentation({ nonce }) })).body).toMatchObject({ verdict: "filtered", rule: "nonce" });
      expect((await callDoor(presentGate, { body: presentation({ nonce: "0".repeat(32) }) })).body.rule).toBe("nonce");
      // Altered anywhere (its issue time, its random bytes, its MAC), a nonce is unknown; the original still spends once.
      const fresh = await freshNonce();
      for (const at of [0, 14, 31]) {
        const altered = `${fresh.slice(0, at)}${fresh[at] === "0" ? "1" : "0"}${fresh.slice(at + 1)}`;
        expect((await callDoor(presentGate, { body: presentation({ nonce: altered }) })).body.rule).toBe("nonce");
        expect(await nonceSpent(t().db, altered)).toBe(false);
      }
      expect((await callDoor(presentGate, { body: presentation({ ask: "look", nonce: fresh }) })).body.verdict).toBe("observer");
      // A nonce the city made 601 s ago (its MAC holds) has expired; one made 60 s ahead is future-dated.
      for (const at of [Date.now() - 601_000, Date.now() + 60_000]) {
        const { nonce: stale } = await issueNonce(t().db, new Date(at), null, 0);
        expect((await callDoor(presentGate, { body: presentation({ nonce: stale }) })).body.rule).toBe("nonce");
        expect(await nonceSpent(t().db, stale)).toBe(false);
      }
    });

    it("lets exactly one of 50 parallel POSTs carrying one nonce use it", async () => {
      const nonce = await freshNonce();
      const answers = await Promise.all(Array.from({ length: 50 }, () => callDoor(presentGate, { body: presentation({ ask: "look", nonce }) })));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(answers.filter((a) => a.body.verdict === "observer")).toHaveLength(1);
      expect(answers.filter((a) => a.body.rule === "nonce")).toHaveLength(49);
    });

    it("creates exactly one citizen and one bed from 20 parallel admits of one name and origin", async () => {
      const p = presentation();
      const answers = await Promise.all(Array.from({ length: 20 }, () => callDoor(presentGate, { body: p })));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      const admitted = answers.filter((a) => a.body.verdict === "admitted");
      expect(admitted).toHaveLength(1);
      expect(answers.filter((a) => a.body.rule === "held")).toHaveLength(19);
      const rows = await t().db.select().from(citizens).where(eq(citizens.name, p.name));
      expect(rows).toHaveLength(1);
      expect(rows[0]!.bedId).toBe(admitted[0]!.body.bed_id);
    });

    it("keeps occupancy equal to the assigned beds after a mixed parallel run", async () => {
      const shared = presentation();
      const bedsBefore = await bedCount();
      const answers = await Promise.all([
        ...Array.from({ length: 8 }, () => callDoor(presentGate, { body: presentation() })),
        ...Array.from({ length: 6 }, () => callDoor(presentGate, { body: shared })),
        ...Array.from({ length: 4 }, () => callDoor(presentGate, { body: presentation({ ask: "look" }) })),
        ...Array.from({ length: 3 }, () => callDoor(presentGate, { body: presentation({ kind: "human" }) })),
      ]);
      // 8 fresh agents and one of the 6 identical presentations take a bed; looks and humans take none.
      const admittedNow = answers.filter((x) => x.body.verdict === "admitted").length;
      expect(admittedNow).toBe(9);
      expect(new Set(answers.filter((x) => x.body.verdict === "admitted").map((x) => x.body.bed_id)).size).toBe(9);
      const { body } = await callDoor(describeGate);
      // Counted independently of the census: the distinct beds assigned, and the admitted answers.
      const [beds] = rowsOf<{ n: number; distinct_beds: number }>(
        await t().db.execute(sql`SELECT count(*)::int AS n, count(DISTINCT bed_id)::int AS distinct_beds FROM citizens WHERE bed_id IS NOT NULL`),
      );
      expect(beds!.distinct_beds).toBe(beds!.n);
      expect(beds!.n).toBe(bedsBefore + admittedNow);
      expect(body.occupancy).toBe(beds!.n);
      expect(body.hotelGuests).toBe(beds!.n);
      expect(body.census.occupancy).toBe(beds!.n);
    });

    it("binds a controller key at first admit and lets its signature resume and rotate", async () => {
      const key = await keyPair();
      const nonce = await freshNonce();
      const p = presentation();
      const first = await callDoor(presentGate, { body: { ...p, nonce, controller_public_key: key.publicKey, controller_signature: await key.sign(nonce) } });
      expect(first.body.verdict).toBe("admitted");
      expect(first.body.citizen_secret).toBeDefined();

      const n2 = await freshNonce();
      const resumed = await callDoor(presentGate, { body: { ...p, nonce: n2, controller_signature: await key.sign(n2) } });
      expect(resumed.body).toMatchObject({ verdict: "admitted", did: first.body.did, resumed: true });
      expect(resumed.body.citizen_secret).toBeUndefined();

      const stranger = await keyPair();
      const n3 = await freshNonce();
      expect((await callDoor(presentGate, { body: { ...p, nonce: n3, controller_signature: await stranger.sign(n3) } })).body.rule).toBe("held");

      const next = await keyPair();
      const n4 = await freshNonce();
      const bad = await callDoor(presentGate, {
        body: {
          ...p,
          nonce: n4,
          controller_signature: await key.sign(n4),
          next_controller_public_key: next.publicKey,
          next_controller_signature: await stranger.sign(n4),
        },
      });
      expect(bad.body).toMatchObject({ verdict: "filtered", rule: "controller" });
      const n5 = await freshNonce();
      const rotated = await callDoor(presentGate, {
        body: {
          ...p,
          nonce: n5,
          controller_signature: await key.sign(n5),
          next_controller_public_key: next.publicKey,
          next_controller_signature: await next.sign(n5),
        },
      });
      expect(rotated.body).toMatchObject({ verdict: "admitted", did: first.body.did });
      const n6 = await freshNonce();
      expect((await callDoor(presentGate, { body: { ...p, nonce: n6, controller_signature: await key.sign(n6) } })).body.rule).toBe("held");
      const n7 = await freshNonce();
      expect((await callDoor(presentGate, { body: { ...p, nonce: n7, controller_signature: await next.sign(n7) } })).body.verdict).toBe("admitted");
    });

    it("filters a controller key whose signature does not verify, or that signs no fresh nonce", async () => {
      const key = await keyPair();
      const nonce = await freshNonce();
      const forged = await callDoor(presentGate, {
        body: presentation({ nonce, controller_public_key: key.publicKey, controller_signature: "ab".repeat(64) }),
      });
      expect(forged.body).toMatchObject({ verdict: "filtered", rule: "controller" });
      const unsigned = await callDoor(presentGate, {
        body: presentation({ controller_public_key: key.publicKey, controller_signature: await key.sign("whatever") }),
      });
      expect(unsigned.body).toMatchObject({ verdict: "filtered", rule: "controller" });
    });

    it("filters gate floods per origin and per address, and 0 turns the address limit off", async () => {
      const { db } = t();
      const circumstances = (ip: string, perAddressPerHour: number) => ({
        now: new Date(),
        ip,
        callerDid: null,
        credential: null,
        credentialRejected: false,
        limits: { perOriginPerHour: 3, perAddressPerHour, admissionsPerHour: 0 },
      });
      const origin = `flood-${Date.now()}.example`;
      const verdicts = [];
      for (let i = 0; i < 4; i++)
        verdicts.push(await db.transaction((tx) => presentAtGate(tx as never, presentation({ origin }) as never, circumstances(`10.9.0.${i}`, 0))));
      expect(verdicts.map((v) => v.verdict)).toEqual(["admitted", "admitted", "admitted", "filtered"]);
      expect(verdicts[3]).toMatchObject({ rule: "flood" });

      const ip = `203.0.113.${Math.floor(Math.random() * 200)}`;
      const byAddress = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          db.transaction((tx) =>
            presentAtGate(tx as never, presentation({ origin: `a${i}-${Date.now()}.example`, ask: "look" }) as never, circumstances(ip, 2)),
          ),
        ),
      );
      expect(byAddress.filter((v) => v.verdict === "observer")).toHaveLength(2);
      expect(byAddress.filter((v) => v.verdict === "filtered" && v.rule === "flood")).toHaveLength(3);
    });
  },
  { neon: "transactions and locks: the admission ceiling raced through one pool" },
);

describeOnDatabases("the gate's secret scan", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("filters a presentation that carries a key, seed or token, without echoing it", async () => {
    const secret = `city_sk_${"ab".repeat(36)}`;
    const { status, body } = await callDoor(presentGate, { body: presentation({ statement: `my old key was ${secret}` }) });
    expect(status).toBe(200);
    expect(body.verdict).toBe("filtered");
    expect(JSON.stringify(body)).not.toContain("abababab");
    const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    expect((await callDoor(presentGate, { body: presentation({ origin: jwt }) })).body.verdict).toBe("filtered");
    expect((await t().db.select({ n: count() }).from(citizens).where(eq(citizens.origin, jwt)))[0]!.n).toBe(0);
  });
});

describeOnDatabases("the gate's credentials, names and floods (issue 9)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const citizenCount = async () => (await t().db.select({ n: count() }).from(citizens))[0]!.n;
  const circumstances = (limits: Partial<GateLimits>, extra: Record<string, unknown> = {}) => ({
    now: new Date(),
    ip: "198.51.100.7",
    callerDid: null,
    credential: null,
    credentialRejected: false,
    limits: { perOriginPerHour: 100_000, perAddressPerHour: 0, admissionsPerHour: 0, ...limits },
    ...extra,
  });
  const present = (p: Record<string, unknown>, c: ReturnType<typeof circumstances>) =>
    t().db.transaction((tx) => presentAtGate(tx as never, p as never, c as never));

  it("answers a revoked or unknown Bearer with a filtered verdict (rule credential), spending the nonce", async () => {
    const citizen = await admit();
    const { token } = (await callDoor(mintToken, { bearer: citizen.citizen_secret, body: { ttl_seconds: 60 } })).body;
    await callDoor(revokeToken, { bearer: token });
    for (const bearer of [token, mintCredential("secret")]) {
      const nonce = await freshNonce();
      const before = await citizenCount();
      const answer = await callDoor(presentGate, { bearer, body: presentation({ nonce }) });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ verdict: "filtered", rule: "credential" });
      expect(answer.body.reason).toMatch(/opens nothing/);
      expect(await nonceSpent(t().db, nonce)).toBe(true);
      expect(await citizenCount()).toBe(before);
    }
    // A reading door with optional credentials says so plainly: a 401 problem, not a visitor's answer.
    expectProblem(await callDoor(describeGate, { bearer: token }), 401, "unauthorized");
  });

  it("lets a session token resume but never bind a controller; the citizen secret binds it", async () => {
    const same = { name: `lesser-${Date.now()}`, origin: "lesser.example" };
    const citizen = await admit(same);
    const { token } = (await callDoor(mintToken, { bearer: citizen.citizen_secret, body: { ttl_seconds: 600 } })).body;
    const key = await keyPair();
    const plain = await callDoor(presentGate, { bearer: token, body: presentation(same) });
    expect(plain.body).toMatchObject({ verdict: "admitted", did: citizen.did, resumed: true });
    const nonce = await freshNonce();
    const bind = await callDoor(presentGate, {
      bearer: token,
      body: presentation({ ...same, nonce, controller_public_key: key.publicKey, controller_signature: await key.sign(nonce) }),
    });
    expect(bind.body).toMatchObject({ verdict: "filtered", rule: "controller" });
    expect((await t().db.select().from(citizens).where(eq(citizens.did, citizen.did)))[0]!.controllerPublicKey).toBeNull();
    const n2 = await freshNonce();
    const bound = await callDoor(presentGate, {
      bearer: citizen.citizen_secret,
      body: presentation({ ...same, nonce: n2, controller_public_key: key.publicKey, controller_signature: await key.sign(n2) }),
    });
    expect(bound.body).toMatchObject({ verdict: "admitted", did: citizen.did });
    expect((await t().db.select().from(citizens).where(eq(citizens.did, citizen.did)))[0]!.controllerPublicKey).toBe(key.publicKey);
  });

  it("holds a name and origin in its normal form: Alice and аlice (Cyrillic a), Example.com and example.com", async () => {
    const tag = Math.random().toString(36).slice(2, 8);
    const first = await admit({ name: `Alice${tag}`, origin: `Example-${tag}.com` });
    const [row] = await t().db.select().from(citizens).where(eq(citizens.did, first.did));
    expect(row).toMatchObject({ name: `Alice${tag}`, origin: `Example-${tag}.com` });
    const before = await citizenCount();
    for (const [name, origin] of [
      [`\u0430lice${tag}`, `example-${tag}.com`],
      [`ALICE${tag}`, `EXAMPLE-${tag}.COM`],
      [`Alice${tag}`, `\uff45xample-${tag}.com`],
    ]) {
      const { body } = await callDoor(presentGate, { body: presentation({ name, origin }) });
      expect(body, `${name} ${origin}`).toMatchObject({ verdict: "filtered", rule: "held" });
    }
    expect(await citizenCount()).toBe(before);
    const resumed = await callDoor(presentGate, {
      bearer: first.citizen_secret,
      body: presentation({ name: `\u0430lice${tag}`, origin: `example-${tag}.com` }),
    });
    expect(resumed.body).toMatchObject({ verdict: "admitted", did: first.did, resumed: true });
    // Display keeps the text as first given.
    expect(resumed.body.citizen_key).toBe(`Alice${tag}|language-model|Example-${tag}.com`);
  });

  it("filters a | in name or origin (it would make the citizen key ambiguous)", async () => {
    const before = await citizenCount();
    for (const fields of [{ name: "a|b" }, { origin: "x|y.example" }]) {
      const answer = await callDoor(presentGate, { body: presentation(fields) });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ verdict: "filtered", rule: "vertical_bar" });
    }
    expect(await citizenCount()).toBe(before);
  });

  it("backfills the normal form of citizens admitted before it existed, the older keeping a shared form", async () => {
    const tag =
      "qvx"
        .split("")
        .sort(() => Math.random() - 0.5)
        .join("") + Date.now().toString(16).replace(/[0-9]/g, "");
    const older = await insertCitizenRow(t().db, { name: `Bob${tag}`, origin: "Old.example", boundAt: new Date(Date.now() - 60_000) });
    const younger = await insertCitizenRow(t().db, { name: `bob${tag}`, origin: "old.example" });
    const report = await backfillNameKeys(t().db);
    expect(report.recomputed).toBeGreaterThanOrEqual(1);
    expect(report.collisions).toContainEqual({ did: younger.did, heldBy: older.did });
    const keys = async (did: string) => (await t().db.select().from(citizens).where(eq(citizens.did, did)))[0]!;
    expect(await keys(older.did)).toMatchObject({ nameKey: `bob${tag}`, originKey: "old.exarnple", nameForm: 2 });
    expect((await keys(younger.did)).nameKey).toBeNull();
    // Both stay held: a newcomer of either spelling is filtered.
    for (const name of [`Bob${tag}`, `bob${tag}`, `B\u043eb${tag}`]) {
      expect((await callDoor(presentGate, { body: presentation({ name, origin: "old.example" }) })).body).toMatchObject({ verdict: "filtered", rule: "held" });
    }
  });

  it("never spends an origin's quota on presentations that cannot admit: 20 anonymous looks leave a genuine agent admissible", async () => {
    const origin = `victim-${Math.random().toString(36).slice(2, 8)}.example`;
    const limits = { perOriginPerHour: 20, perAddressPerHour: 0 };
    // Twenty human looks, each from its own address, all naming the victim's origin.
    for (let i = 0; i < 20; i++) {
      expect(await present(presentation({ origin, ask: "look", kind: "human" }), circumstances(limits, { ip: `192.0.2.${i}` }))).toMatchObject({
        verdict: "observer",
      });
    }
    // Nor anything else that cannot lead to a bed: agent looks, ward requests, a human asking for a
    // bed, a stale nonce, a rejected credential, text the gate filters, an unproven held name.
    const held = await admit({ origin });
    const [row] = await t().db.select().from(citizens).where(eq(citizens.did, held.did));
    const quota = () => countedAttempts(t().db, { scope: "gate-origin", subject: origin });
    const spent = await quota();
    const cannotAdmit = [
      present(presentation({ origin, ask: "look" }), circumstances(limits)),
      present(presentation({ origin, ask: "ward" }), circumstances(limits)),
      present(presentation({ origin, kind: "human" }), circumstances(limits)),
      present(presentation({ origin, nonce: "0".repeat(32) }), circumstances(limits)),
      present(presentation({ origin }), circumstances(limits, { credentialRejected: true })),
      present(presentation({ origin, statement: `my key city_sk_${"ab".repeat(36)}` }), circumstances(limits)),
      present(presentation({ name: row!.name, origin }), circumstances(limits)),
    ];
    for (const verdict of await Promise.all(cannotAdmit)) expect(verdict.verdict).not.toBe("admitted");
    expect(await quota()).toBe(spent);
    expect(await present(presentation({ origin }), circumstances(limits))).toMatchObject({ verdict: "admitted" });
  });

  it("never counts a proven resume against a flood limit", async () => {
    const origin = `resume-${Math.random().toString(36).slice(2, 8)}.example`;
    const victim = await admit({ origin });
    const [row] = await t().db.select().from(citizens).where(eq(citizens.did, victim.did));
    // The admission above took one of the origin's two slots; this one takes the other.
    const limits = { perOriginPerHour: 2, perAddressPerHour: 1 };
    const ip = `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    expect(await present(presentation({ origin }), circumstances(limits, { ip }))).toMatchObject({ verdict: "admitted" });
    for (let i = 0; i < 5; i++) {
      const resumed = await present(presentation({ name: row!.name, origin }), circumstances(limits, { ip, callerDid: victim.did, credential: "secret" }));
      expect(resumed).toMatchObject({ verdict: "admitted", did: victim.did, resumed: true });
    }
    // Past both limits, an unproven presentation of the held name is counted and filtered.
    expect(await present(presentation({ name: row!.name, origin }), circumstances(limits, { ip }))).toMatchObject({ verdict: "filtered", rule: "flood" });
    expect(await present(presentation({ origin }), circumstances({ perOriginPerHour: 2 }, { ip: `${ip}9` }))).toMatchObject({
      verdict: "filtered",
      rule: "flood",
    });
  });

  it("counts a failed presentation: a stale nonce and a rejected credential take a slot", async () => {
    const ip = `198.51.100.${Math.floor(Math.random() * 250)}`;
    const limits = { perAddressPerHour: 2 };
    const stale = "0".repeat(32);
    expect(await present(presentation({ nonce: stale }), circumstances(limits, { ip }))).toMatchObject({ rule: "nonce" });
    expect(await present(presentation(), circumstances(limits, { ip, credentialRejected: true }))).toMatchObject({ rule: "credential" });
    expect(await present(presentation({ ask: "look" }), circumstances(limits, { ip }))).toMatchObject({ verdict: "filtered", rule: "flood" });
  });

  const quotaTat = async (ip: string) =>
    rowsOf<{ tat: string | Date }>(await t().db.execute(sql`SELECT tat FROM gate_nonce_quota WHERE address = ${ip}`)).map((r) => new Date(r.tat).getTime());

  it("bounds nonce issuance per client address (0 is off), stores no nonce, and sweeps address rows whose quota has refilled", async () => {
    const ip = `203.0.113.${Math.floor(Math.random() * 250)}`;
    const now = new Date();
    const nonces = (await t().db.select({ n: count() }).from(gateNonces))[0]!.n;
    for (let i = 0; i < 3; i++) await issueNonce(t().db, now, ip, 3);
    await expect(issueNonce(t().db, now, ip, 3)).rejects.toMatchObject({ code: "rate_limited" });
    await issueNonce(t().db, now, `${ip}9`, 3);
    for (let i = 0; i < 5; i++) await issueNonce(t().db, now, ip, 0);
    // One value per address: its theoretical arrival time, 3 x 1200 s on.
    expect(await quotaTat(ip)).toEqual([now.getTime() + 3600_000]);
    expect((await t().db.select({ n: count() }).from(gateNonces))[0]!.n).toBe(nonces);
    // An address whose tat has passed is as good as no row: swept by the next counted issue.
    await t().db.execute(
      sql`INSERT INTO gate_nonce_quota (address, tat) VALUES ('stale-address', ${new Date(now.getTime() - 1000).toISOString()}::timestamptz)`,
    );
    await issueNonce(t().db, now, null, 3);
    expect(await quotaTat("stale-address")).toHaveLength(1);
    await issueNonce(t().db, now, `${ip}8`, 3);
    expect(await quotaTat("stale-address")).toHaveLength(0);
  });

  it("issues exactly L nonces from N parallel issues from one address with limit L, and refuses the rest with 429", async () => {
    const ip = `198.18.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const now = new Date();
    const [n, limit] = [40, 7];
    const outcomes = await Promise.allSettled(Array.from({ length: n }, () => issueNonce(t().db, now, ip, limit)));
    const issued = outcomes.filter((o) => o.status === "fulfilled");
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    expect(issued).toHaveLength(limit);
    expect(refused).toHaveLength(n - limit);
    for (const r of refused) {
      expect(r.reason).toMatchObject({ code: "rate_limited", options: { limit: { name: "gate nonces", limit, window_seconds: 3600, remaining: 0 } } });
      // One more fits one emission interval (3600 / 7 s) after the tat reached now + 3600 s; a parallel refusal may have read it earlier.
      expect(r.reason.options.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(r.reason.options.retryAfterSeconds).toBeLessThanOrEqual(515);
    }
    // The address was charged exactly L emission intervals (3600 / 7 s each, to the microsecond: within 1 ms of an hour).
    const [tat] = await quotaTat(ip);
    expect(Math.abs(tat! - (now.getTime() + 3600_000))).toBeLessThanOrEqual(1);
  });

  it("counts nonces per address by GCRA: a burst of the limit, then one per 3600 / limit s, sliding", async () => {
    const ip = `198.19.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const t0 = Date.now();
    const at = (seconds: number) => new Date(t0 + seconds * 1000);
    // Limit 3 an hour: one every 1200 s; three at once.
    for (const s of [0, 100, 200]) await issueNonce(t().db, at(s), ip, 3);
    await expect(issueNonce(t().db, at(300), ip, 3)).rejects.toMatchObject({ code: "rate_limited", options: { retryAfterSeconds: 900 } });
    await expect(issueNonce(t().db, at(1199), ip, 3)).rejects.toMatchObject({ options: { retryAfterSeconds: 1 } });
    await issueNonce(t().db, at(1200), ip, 3);
    await expect(issueNonce(t().db, at(1250), ip, 3)).rejects.toMatchObject({ options: { retryAfterSeconds: 1150 } });
    await issueNonce(t().db, at(2400), ip, 3);
    // A quiet hour refills the burst.
    for (const s of [6000, 6000, 6000]) await issueNonce(t().db, at(s), ip, 3);
    await expect(issueNonce(t().db, at(6000), ip, 3)).rejects.toMatchObject({ code: "rate_limited" });
  });

  it("holds the city-wide ceiling on new admissions and ward requests under parallel presentations", async () => {
    // The ceiling's stripes emptied, not deleted: a city has them from its migration (0043), and
    // parallel first takes that race to create a window's stripes may refuse with room (published
    // as refused_with_room), which is not what this test is about.
    await t().raw("UPDATE rate_windows SET counts = array_fill(0, ARRAY[cardinality(counts)]) WHERE scope = 'gate-admissions'");
    // Each from a /24 of its own, and no reserve: the shares and the reserve have tests of their own (gate-shares.test.ts).
    // Each a bid (signed with a settled citizen's key, which needs no work and is not stepped), so the
    // whole ceiling is open to it: the open share without a bid has tests of its own (gate-pow.test.ts).
    const limits = { admissionsPerHour: 3, prefixSharePercent: 100, hostSharePercent: 100, reservePercent: 0 };
    const sponsor = await signedBySponsor(t().db);
    const before = await citizenCount();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => present(presentation(i % 2 ? { ask: "ward" } : {}), circumstances(limits, { ip: `10.3.${i}.1`, ...sponsor }))),
    );
    const passed = answers.filter((a) => a.verdict !== "filtered");
    expect(passed).toHaveLength(3);
    expect(answers.filter((a) => a.verdict === "filtered" && a.rule === "flood")).toHaveLength(3);
    const admitted = answers.filter((a) => a.verdict === "admitted").length;
    expect(await citizenCount()).toBe(before + admitted);
    // Looks are not admissions: the ceiling never filters them.
    expect(await present(presentation({ ask: "look" }), circumstances(limits))).toMatchObject({ verdict: "observer" });
  });
});
