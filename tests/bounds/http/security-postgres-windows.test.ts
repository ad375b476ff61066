import { describe, expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../../support/limits";
import { keyPair, presentation } from "../../support/gate";
import { type Admitted, type Answer, type Race, describeOnServer, signedProof, usePostgresCity, useSecondInstance } from "../../support/postgres-city";
import { mnemonic } from "../../support/scan-corpus";
import { signRequest } from "@/lib/sign-request";
import { newKey } from "../../support/signed";

/*
 * The gate nonce, the hourly windows of mail and the public boards, the lot locks and the
 * restriction trigger racing proofs, each raced through real HTTP against the built server on
 * PostgreSQL (Neon driver), with exact counts: accepted + parked + refused = sent, and the rows
 * read back from the database are exactly the accepted (and parked) answers.
 */

// The oracle is the spec's numbers as literals (mail 60, plaza and bazaar 20, lot locks 10 an
// hour), never the code's own LIMITS; the parked cap, which the spec does not set, is the number
// each parking door publishes in its limits (parked_writes: twice the hourly window).
const SPEC = { mail: 60, plaza: 20, bazaar: 20, lotLocks: 10 } as const;
const PUBLISHED_PARKED = { mail: 120, plaza: 40, bazaar: 40 } as const;

/** The ids a set of answers carry (`field` of each body), sorted, as text. */
const idsOf = (answers: Answer[], field: string) => answers.map((a) => String(a.body[field])).sort();
const sortedRows = (text: string) => (text ? text.split("\n").sort() : []);

describeOnServer("the built server on PostgreSQL: the windows and triggers under parallel requests", () => {
  const city = usePostgresCity("security-postgres-windows");

  /** Over a parking window: exactly the window stored, exactly the parked cap parked, the rest refused 429 and kept nowhere. */
  async function expectWindow(race: Race, perHour: number, parkedCap: number, table: { stored: string; storedWhere: string; door: string; did: string }) {
    const sent = race.answers.length;
    expect(race.accepted, race.statuses.join(",")).toBe(perHour);
    expect(race.parked).toBe(parkedCap);
    expect(race.refused).toBe(sent - perHour - parkedCap);
    for (const answer of race.answers.filter((a) => a.status >= 400)) expect(answer.body.code).toBe("rate_limited");
    const stored = sortedRows(await city().psql(`SELECT id FROM ${table.stored} WHERE ${table.storedWhere}`));
    expect(stored).toEqual(
      idsOf(
        race.answers.filter((a) => a.status === 200),
        "id",
      ),
    );
    const parked = sortedRows(await city().psql(`SELECT id FROM quarantine WHERE did = '${table.did}' AND door = '${table.door}'`));
    expect(parked).toEqual(
      idsOf(
        race.answers.filter((a) => a.status === 202),
        "quarantine_id",
      ),
    );
  }

  it("lets one gate nonce presented 30 times at once admit exactly one citizen", async () => {
    const { nonce } = (await city().get("/gate")).body as { nonce: string };
    const before = await city().count("citizens");
    const race = await city().race(30, () => city().post("/gate", presentation({ nonce })));
    // Filtered is a verdict, not a failure (200): one admission, 29 spent-nonce filters.
    const admitted = race.answers.filter((a) => a.body.verdict === "admitted");
    expect(admitted).toHaveLength(1);
    expect(race.answers.filter((a) => a.body.verdict === "filtered" && a.body.rule === "nonce")).toHaveLength(29);
    expect(await city().count("citizens")).toBe(before + 1);
    expect(await city().count("citizens", `did = '${admitted[0]!.body.did}'`)).toBe(1);
    expect(await city().count("gate_nonces", `nonce = '${nonce}'`)).toBe(1);
  });

  it(
    "sends exactly 60 of 190 parallel mails, parks the 120 of the cap and refuses the rest",
    async () => {
      const [sender, recipient] = [await city().admit(), await city().admit()];
      const sent = SPEC.mail + PUBLISHED_PARKED.mail + 10;
      const race = await city().race(sent, (i) => city().post("/api/message", { to: recipient.did, body: `mail ${i}` }, sender.citizen_secret));
      await expectWindow(race, SPEC.mail, PUBLISHED_PARKED.mail, {
        stored: "messages",
        storedWhere: `from_did = '${sender.did}'`,
        door: "send-message",
        did: sender.did,
      });
      // A refused mail is stored nowhere: neither delivered nor parked.
      const bodies = race.answers.flatMap((a, i) => (a.status === 429 ? [`'mail ${i}'`] : [])).join(",");
      expect((await city().count("messages", `body IN (${bodies})`)) + (await city().count("quarantine", `payload->>'body' IN (${bodies})`))).toBe(0);
    },
    HEAVY_TEST_MS,
  );

  it(
    "keeps the plaza's and the bazaar's windows apart under one parallel burst on both boards",
    async () => {
      const poster = await city().admit();
      const each = SPEC.plaza + PUBLISHED_PARKED.plaza + 5;
      const boardOf = (i: number) => (i % 2 ? "bazaar" : "plaza");
      const race = await city().race(2 * each, (i) => city().post(`/api/${boardOf(i)}`, { body: `post ${i}` }, poster.citizen_secret));
      for (const board of ["plaza", "bazaar"] as const) {
        const answers = race.answers.filter((_, i) => boardOf(i) === board);
        const statuses = answers.map((a) => a.status);
        const onBoard: Race = {
          answers,
          statuses,
          accepted: statuses.filter((s) => s === 200).length,
          parked: statuses.filter((s) => s === 202).length,
          refused: statuses.filter((s) => s >= 400).length,
        };
        await expectWindow(onBoard, SPEC[board], PUBLISHED_PARKED[board], {
          stored: "posts",
          storedWhere: `did = '${poster.did}' AND board = '${board}'`,
          door: `post-${board}`,
          did: poster.did,
        });
      }
    },
    HEAVY_TEST_MS,
  );

  it(
    `lets exactly ${SPEC.lotLocks} of 14 parallel lot locks through, and one lot to one of 8 racing citizens`,
    async () => {
      const holder = await city().admit();
      const lots = Array.from({ length: 14 }, (_, i) => `lot-${String(i + 1).padStart(2, "0")}`);
      const race = await city().race(lots.length, (i) => city().post("/api/lot", { lot: lots[i], action: "lock" }, holder.citizen_secret));
      expect(race.accepted).toBe(SPEC.lotLocks);
      expect(race.refused).toBe(lots.length - SPEC.lotLocks);
      for (const answer of race.answers.filter((a) => a.status !== 200)) {
        expect(answer.status).toBe(429);
        expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
      }
      const held = sortedRows(await city().psql(`SELECT lot FROM lot_locks WHERE did = '${holder.did}' AND released_at IS NULL`));
      expect(held).toEqual(
        race.answers
          .filter((a) => a.status === 200)
          .map((a) => a.body.lot as string)
          .sort(),
      );
      expect(await city().count("rate_windows, unnest(counts) AS c, generate_series(1, c)", `scope = 'lock-lot' AND subject = '${holder.did}'`)).toBe(
        SPEC.lotLocks,
      );

      const rivals = await Promise.all(Array.from({ length: 8 }, () => city().admit()));
      const contest = await city().race(rivals.length, (i) => city().post("/api/lot", { lot: "lot-40", action: "lock" }, rivals[i]!.citizen_secret));
      expect(contest.accepted).toBe(1);
      expect(contest.statuses.filter((s) => s === 409)).toHaveLength(rivals.length - 1);
      const winner = contest.answers.find((a) => a.status === 200)!.body.holder;
      expect(await city().psql("SELECT string_agg(did, ',') FROM lot_locks WHERE lot = 'lot-40' AND released_at IS NULL")).toBe(winner);
      // A lost lock gives its window slot back: only the winner's attempt is counted.
      expect(
        await city().count(
          "rate_windows, unnest(counts) AS c, generate_series(1, c)",
          `scope = 'lock-lot' AND subject IN (${rivals.map((r) => `'${r.did}'`).join(",")})`,
        ),
      ).toBe(1);
    },
    HEAVY_TEST_MS,
  );

  it(
    "restricts a citizen whose third refusal races twelve proofs: restricted at the end, no proof after the restriction",
    async () => {
      const refuse = (who: Admitted) => city().post("/api/locker", { bag: "keys", content: mnemonic(12) }, who.citizen_secret);
      const racers = await Promise.all(Array.from({ length: 3 }, () => city().admit()));
      const proofs = new Map<string, Awaited<ReturnType<typeof signedProof>>[]>();
      for (const who of racers) {
        for (let i = 0; i < 2; i++) expect((await refuse(who)).status).toBe(422);
        proofs.set(who.did, await Promise.all(Array.from({ length: 12 }, async () => signedProof(city(), who.citizen_secret, await keyPair()))));
      }
      // Per citizen: six proofs, the third refusal, six more; the three citizens race at once.
      const plan = racers.flatMap((who) => [
        ...proofs
          .get(who.did)!
          .slice(0, 6)
          .map((proof) => ({ who, proof })),
        { who, proof: null },
        ...proofs
          .get(who.did)!
          .slice(6)
          .map((proof) => ({ who, proof })),
      ]);
      const race = await city().race(plan.length, (i) => {
        const { who, proof } = plan[i]!;
        return proof ? city().post("/api/prove", proof, who.citizen_secret) : refuse(who);
      });
      const answered = plan.map((step, i) => ({ ...step, answer: race.answers[i]! }));
      for (const who of racers) {
        const mine = answered.filter((step) => step.who === who);
        const proofAnswers = mine.filter((step) => step.proof !== null).map((step) => step.answer);
        const refusal = mine.find((step) => step.proof === null)!.answer;
        expect(refusal.status, JSON.stringify(refusal.body)).toBe(422);
        const proven = proofAnswers.filter((a) => a.status === 200).length;
        expect(proofAnswers.filter((a) => a.status === 403)).toHaveLength(12 - proven);
        for (const answer of proofAnswers.filter((a) => a.status === 403)) expect(answer.body.code).toBe("forbidden");
        expect(await city().psql(`SELECT tier FROM citizens WHERE did = '${who.did}'`)).toBe("restricted");
        expect(await city().count("content_refusals", `did = '${who.did}'`)).toBe(3);
        expect(await city().count("tier_events", `did = '${who.did}' AND event = 'restrict'`)).toBe(1);
        // Stored proofs are exactly the accepted ones, all before the restriction, and nothing leaves restricted.
        expect(await city().count("tier_events", `did = '${who.did}' AND event = 'prove'`)).toBe(proven);
        expect(await city().count("tier_events", `did = '${who.did}' AND from_tier = 'restricted'`)).toBe(0);
        const restrictId = Number(await city().psql(`SELECT id FROM tier_events WHERE did = '${who.did}' AND event = 'restrict'`));
        expect(await city().count("tier_events", `did = '${who.did}' AND event = 'prove' AND id > ${restrictId}`)).toBe(0);
      }
    },
    HEAVY_TEST_MS,
  );
  it(
    "stores the same signed write (CITY-SIG/1) sent 8 times at once exactly once, and the plat shows the citizen signs with a key",
    async () => {
      const key = await newKey();
      const { nonce } = (await city().get("/gate")).body as { nonce: string };
      const name = presentation().name as string;
      const admitted = await city().post(
        "/gate",
        presentation({ name, nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) }),
      );
      expect(admitted.body.verdict, JSON.stringify(admitted.body)).toBe("admitted");
      const did = admitted.body.did as string;
      const url = `${city().server.baseUrl}/api/vault`;
      const body = JSON.stringify({ content: "raced, signed" });
      const headers = { "content-type": "application/json", ...(await signRequest({ method: "POST", url, body, privateKey: key.seed })) };
      const race = await city().race(8, () => city().call("/api/vault", { method: "POST", headers, body }));
      expect(race.accepted, `${race.statuses.join(",")} ${JSON.stringify(race.answers[0]!.body)}`).toBe(1);
      for (const answer of race.answers.filter((a) => a.status !== 200)) {
        expect(answer.status).toBe(401);
        expect(answer.body.code).toBe("signature_replayed");
        expect(answer.headers.get("accept-signature")).toContain('"content-digest"');
      }
      expect(await city().count("vault_notes", `did = '${did}'`)).toBe(1);
      expect(await city().count("signature_nonces", `keyid = '${key.keyid}'`)).toBe(1);
      // The plat's directory row: it signs with a key, the keyid's first characters shown.
      const page = await city().call(`/peers?q=${encodeURIComponent(name)}`);
      expect(page.status).toBe(200);
      expect(String(page.body.text)).toContain(`signs with key ${key.keyid.slice(0, 8)}…`);
    },
    HEAVY_TEST_MS,
  );
});

/*
 * Issue 42: the city-wide admissions ceiling counted over stripes, at its edge, raced through two
 * `next start` instances on one database (a load balancer's two halves), every presentation from
 * an address of its own (X-Forwarded-For through one trusted proxy): exactly the ceiling admitted,
 * the stripes' counts equal to the citizens admitted, and a presentation the ceiling refused has
 * spent nothing per address or origin.
 */
describeOnServer("two instances at the edge of the city-wide admissions ceiling", () => {
  const CEILING = 24;
  // What presentations without a key reach of it (issue 43): the reserve keeps a fifth.
  const KEYLESS = Math.floor(CEILING * 0.8);
  // What those without a proof-of-work bid reach (docs/pow.md): three quarters of it, the open share.
  const OPEN = Math.floor((KEYLESS * 3) / 4);
  const ENV = {
    CITY_TRUSTED_PROXIES: "1",
    VERCEL: "",
    CITY_GATE_ADMISSIONS_PER_HOUR: String(CEILING),
    CITY_GATE_PER_ADDRESS_PER_HOUR: "5",
    CITY_GATE_PER_ORIGIN_PER_HOUR: "5",
  };
  const city = usePostgresCity("windows-two-instances", ENV);
  const other = useSecondInstance(city, ENV);
  /** A presentation from address `10.42.i.9`, sent to one instance or the other by turns. */
  async function present(i: number): Promise<Answer> {
    const base = i % 2 ? other().baseUrl : city().server.baseUrl;
    const response = await fetch(`${base}/gate`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": `10.42.${i}.9` },
      body: JSON.stringify(presentation({ origin: `edge-${i}.example` })),
    });
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    return { status: response.status, type, headers: response.headers, body: text && type.includes("json") ? JSON.parse(text) : { text } };
  }
  const stripeCount = () => city().count("rate_windows, unnest(counts) AS c, generate_series(1, c)", "scope = 'gate-admissions'");

  it(`admits exactly ${OPEN} of 60 keyless presentations without a bid (3/4 of ${CEILING} less the reserve) from 60 addresses raced over both instances, and charges nothing per subject for the rest`, async () => {
    const citizensBefore = await city().count("citizens");
    expect(await stripeCount()).toBe(0);
    const race = await city().race(60, present);
    const admitted = race.answers.filter((a) => a.body.verdict === "admitted");
    expect(admitted, JSON.stringify(race.answers.map((a) => a.body.rule ?? a.body.verdict))).toHaveLength(OPEN);
    for (const refused of race.answers.filter((a) => a.body.verdict !== "admitted")) {
      expect(refused.body).toMatchObject({ verdict: "filtered", rule: "flood" });
      expect(String(refused.body.reason)).toMatch(/Nothing was counted against your address or origin/);
    }
    expect(await city().count("citizens")).toBe(citizensBefore + OPEN);
    // Every published count equals SQL: the ceiling's stripes hold the admissions, one each.
    expect(await stripeCount()).toBe(OPEN);
    expect(await city().count("rate_windows", "scope = 'gate-admissions' AND (SELECT sum(c) FROM unnest(counts) AS c) = 1")).toBe(OPEN);
    // Only the admitted presentations' addresses and origins are counted (a refused one's takes were given back).
    expect(await city().count("rate_windows, unnest(counts) AS c, generate_series(1, c)", "scope = 'gate-address'")).toBe(OPEN);
    expect(await city().count("rate_windows", "scope = 'gate-origin'")).toBe(OPEN);
  }, 120_000);
});
