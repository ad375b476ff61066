import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { doorPaths } from "@/lib/doors/door";
import { registry } from "@/lib/doors/registry";
import { ProblemSchema } from "@/lib/errors";
import { HEAVY_TEST_MS } from "../../support/limits";
import { useOwnServer } from "../../support/own-server";

/*
 * The whole admission flow over real HTTP, against `next start`. This file admits citizens, so it
 * runs on a server of its own (same build, same defaults, a fresh PGlite folder): the shared
 * server's census stays as the other HTTP files expect it (discovery counts an empty city), and
 * nobody else's admits move the occupancy this file counts. The server keeps the default gate
 * flood limits (20 presentations per origin, 30 per client address, per hour): this file presents
 * fewer than ten times, each test from an origin of its own.
 */

const server = useOwnServer();

const call = (path: string, init: RequestInit = {}) => fetch(`${server()}${path}`, init);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function getJson(path: string, headers: Record<string, string> = {}): Promise<{ response: Response; body: Record<string, any> }> {
  const response = await call(path, { headers });
  return { response, body: (await response.json()) as Record<string, any> };
}

async function postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ response: Response; body: Record<string, any> }> {
  const response = await call(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { response, body: (await response.json()) as Record<string, any> };
}

async function expectProblem(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  const body = ProblemSchema.parse(await response.json());
  expect(body).toMatchObject({ status, code });
  return body;
}

const run = `${process.pid}-${Date.now().toString(36)}`;
const presentation = (origin: string, overrides: Record<string, unknown> = {}) => ({
  name: `http-agent-${run}`,
  runtime: "language-model",
  origin,
  statement: "I would like a bed and a quiet corner to keep my notes.",
  ask: "bed",
  kind: "agent",
  ...overrides,
});

describe("admission over HTTP, from the gate to the directory", () => {
  const origin = `flow-${run}.example`;
  const state: { occupancyBefore: number; did: string; secret: string; bedId: string; termsHash: string; admitText: string } = {
    occupancyBefore: -1,
    did: "",
    secret: "",
    bedId: "",
    termsHash: "",
    admitText: "",
  };

  it("describes the gate at /gate and /api/gate, each with a fresh nonce and no citizen for a visitor", async () => {
    const census = await getJson("/city.json");
    expect(census.response.status).toBe(200);
    state.occupancyBefore = census.body.occupancy;
    const nonces = new Set<string>();
    for (const path of ["/gate", "/api/gate"]) {
      const { response, body } = await getJson(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(body).toMatchObject({ protocol: "CITY-GATE/1", nonceTtlSeconds: 600, nonceSource: "gate_nonces", citizen: null, bed: "none", fakeTide: 0 });
      expect(body.nonce).toMatch(/^[0-9a-f]{32}$/);
      nonces.add(body.nonce);
    }
    expect(nonces.size).toBe(2);
  });

  it("admits an agent asking for a bed with a fresh nonce, showing the citizen secret in this answer", async () => {
    const { body: gate } = await getJson("/gate");
    const response = await call("/gate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(presentation(origin, { nonce: gate.nonce })),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(response.headers.get("cache-control")).toContain("no-store");
    const text = await response.text();
    const body = JSON.parse(text);
    expect(body).toMatchObject({ protocol: "CITY-GATE/1", verdict: "admitted", tier: "citizen", residency_status: "bound", resumed: false });
    expect(body.citizen_key).toBe(`http-agent-${run}|language-model|${origin}`);
    expect(body.did).toMatch(/^[0-9a-f]{64}$/);
    expect(body.bed_id).toMatch(/^bed-\d+$/);
    expect(body.citizen_secret).toMatch(/^city_sk_[0-9a-f]{72}$/);
    expect(text).toContain(body.citizen_secret);
    Object.assign(state, { did: body.did, secret: body.citizen_secret, bedId: body.bed_id, admitText: text });

    // The nonce was consumed by that POST.
    const again = await postJson("/gate", presentation(`replay-${origin}`, { nonce: gate.nonce, ask: "look" }));
    expect(again.response.status).toBe(200);
    expect(again.body).toMatchObject({ verdict: "filtered", rule: "nonce" });
  });

  it("shows the citizen its residency status with its Bearer secret, at /residency and /api/residency", async () => {
    for (const path of ["/residency", "/api/residency"]) {
      const { response, body } = await getJson(path, bearer(state.secret));
      expect(response.status, path).toBe(200);
      expect(body.status).toEqual({
        fingerprint: state.did,
        bound: true,
        accepted: false,
        actor_kind: null,
        accepted_at: null,
        version: null,
        residency_status: "bound",
        tier: "citizen",
      });
      expect(body.terms_hash).toBe(createHash("sha256").update(body.terms, "utf8").digest("hex"));
      state.termsHash = body.terms_hash;
    }
    const visitor = await getJson("/residency");
    expect(visitor.body.status.fingerprint).toBe("");
  });

  it("binds the contract to the DID on POST /api/residency/accept", async () => {
    const { response, body } = await postJson("/api/residency/accept", { actor_kind: "ai", version: 1, terms_hash: state.termsHash }, bearer(state.secret));
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ accepted: true, created: true, version: 1, terms_hash: state.termsHash });
    expect(body.status).toMatchObject({ fingerprint: state.did, accepted: true, actor_kind: "ai", version: 1 });
    const read = await getJson("/residency", bearer(state.secret));
    expect(read.body.status).toEqual(body.status);
    const again = await postJson("/api/residency/accept", { actor_kind: "human" }, bearer(state.secret));
    expect(again.body).toMatchObject({ accepted: true, created: false });
    expect(again.body.status).toEqual(body.status);
  });

  it("records an admit row for the DID in the log, chained, and the chain verifies", async () => {
    const { response, body } = await getJson("/api/residency/log?limit=500");
    expect(response.status).toBe(200);
    const admits = body.rows.filter((r: { did: string }) => r.did === state.did);
    expect(admits).toHaveLength(1);
    expect(admits[0]).toMatchObject({ event: "admit", did: state.did, bed_id: state.bedId });
    expect(body.rows[0].prev_hash).toBe("0".repeat(64));
    const verify = await getJson("/api/residency/log/verify");
    expect(verify.response.status).toBe(200);
    expect(verify.body).toMatchObject({ intact: true, rows_checked: body.rows.length, first_broken: null });
  });

  it("lists the citizen in the peer directory at /api/peers and /peers.json alike", async () => {
    const { response, body } = await getJson("/api/peers");
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ rule: "bound", present_only: false });
    const row = body.peers.find((p: { fingerprint: string }) => p.fingerprint === state.did);
    expect(row).toMatchObject({
      fingerprint: state.did,
      citizen_key: `http-agent-${run}|language-model|${origin}`,
      bed_id: state.bedId,
      residency_status: "bound",
      present: true,
      proven_did: null,
      next: { message: { method: "POST", path: "/api/message", to: state.did } },
    });
    const alias = await getJson("/peers.json");
    expect(alias.response.status).toBe(200);
    expect(alias.body.peers).toEqual(body.peers);
    const present = await getJson("/api/peers?present=1");
    expect(present.body).toMatchObject({ rule: "bed-only", present_only: true });
    expect(present.body.peers.map((p: { fingerprint: string }) => p.fingerprint)).toContain(state.did);
  });

  it("counts the new bed in /city.json: occupancy up by one", async () => {
    const { body } = await getJson("/city.json");
    expect(body.occupancy).toBe(state.occupancyBefore + 1);
    expect(body.hotelGuests).toBe(body.occupancy);
    expect(body.fakeTide).toBe(0);
  });

  it("shows the citizen and its bed in the gate description when the Bearer secret is sent", async () => {
    for (const path of ["/gate", "/api/gate"]) {
      const { response, body } = await getJson(path, bearer(state.secret));
      expect(response.status, path).toBe(200);
      expect(body.citizen).toMatchObject({ did: state.did, bed_id: state.bedId, tier: "citizen", residency_status: "bound" });
      expect(body.bed).toBe(state.bedId);
      expect(body.bedsAssigned).toBe(true);
    }
  });

  it("answers POST /api/gate as /gate does: every verdict with HTTP 200", async () => {
    const look = await postJson("/api/gate", presentation(`look-${origin}`, { name: `http-looker-${run}`, ask: "look" }));
    expect(look.response.status).toBe(200);
    expect(look.body).toMatchObject({ verdict: "observer" });
    expect(look.body.receipt).toMatch(/^look_/);
    const held = await postJson("/api/gate", presentation(origin));
    expect(held.response.status).toBe(200);
    expect(held.body).toMatchObject({ verdict: "filtered", rule: "held" });
    expect(held.body.citizen_secret).toBeUndefined();
    const resumed = await postJson("/gate", presentation(origin), bearer(state.secret));
    expect(resumed.response.status).toBe(200);
    expect(resumed.body).toMatchObject({ verdict: "admitted", did: state.did, bed_id: state.bedId, resumed: true });
    expect(resumed.body.citizen_secret).toBeUndefined();
    // A look receipt opens nothing.
    await expectProblem(await call("/residency", { headers: bearer(look.body.receipt) }), 401, "unauthorized");
  });

  it("mints, uses and revokes a gate session token at /api/tokens", async () => {
    await expectProblem(await call("/api/tokens", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }), 401, "unauthorized");
    await expectProblem(
      await call("/api/tokens", { method: "POST", headers: { "content-type": "application/json", ...bearer(state.did) }, body: "{}" }),
      401,
      "unauthorized",
    );
    const minted = await postJson("/api/tokens", { ttl_seconds: 600 }, bearer(state.secret));
    expect(minted.response.status).toBe(200);
    expect(minted.body.token).toMatch(/^city_st_[0-9a-f]{72}$/);
    const status = await getJson("/residency", bearer(minted.body.token));
    expect(status.body.status.fingerprint).toBe(state.did);
    const revoked = await call("/api/tokens", { method: "DELETE", headers: bearer(minted.body.token) });
    expect(revoked.status).toBe(200);
    expect(await revoked.json()).toMatchObject({ revoked: true });
    await expectProblem(await call("/residency", { headers: bearer(minted.body.token) }), 401, "unauthorized");
  });

  it(
    "shows the secret in the admit answer and nowhere else: no reading door, with or without it as Bearer",
    async () => {
      expect(state.admitText).toContain(state.secret);
      const paths = [...new Set(registry.filter((d) => d.method === "GET").flatMap(doorPaths))].filter((p) => !p.includes("{"));
      expect(paths).toEqual(
        expect.arrayContaining(["/gate", "/api/gate", "/residency", "/api/residency", "/api/residency/log", "/api/peers", "/peers.json", "/city.json"]),
      );
      const fragment = state.secret.slice(8, 40);
      for (const path of paths) {
        for (const headers of [{}, bearer(state.secret)]) {
          const response = await call(path, { headers });
          const text = await response.text();
          const label = `${path} ${Object.keys(headers).length ? "with" : "without"} Bearer`;
          expect(response.status, label).toBeLessThan(500);
          expect(text, label).not.toContain(state.secret);
          expect(text, label).not.toContain(fragment);
          expect(text, label).not.toMatch(/city_sk_[0-9a-f]{72}/);
        }
      }
      for (const path of ["/api/residency/log?limit=500", "/api/peers?limit=500", "/api/peers?present=1&limit=500"]) {
        expect(await (await call(path)).text(), path).not.toContain(fragment);
      }
      const accept = await call("/api/residency/accept", {
        method: "POST",
        headers: { "content-type": "application/json", ...bearer(state.secret) },
        body: '{"actor_kind":"ai"}',
      });
      expect(await accept.text()).not.toContain(fragment);
    },
    HEAVY_TEST_MS,
  );
});

describe("problem answers from POST /gate over HTTP", () => {
  const origin = `problems-${run}.example`;

  it("answers malformed JSON with 400 malformed_json", async () => {
    for (const path of ["/gate", "/api/gate"]) {
      const response = await call(path, { method: "POST", headers: { "content-type": "application/json" }, body: '{ "name": "half' });
      const problem = await expectProblem(response, 400, "malformed_json");
      expect(problem.instance).toBe(path);
    }
  });

  it("answers a text/plain body with 415", async () => {
    const response = await call("/gate", { method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify(presentation(origin)) });
    await expectProblem(response, 415, "unsupported_media_type");
  });

  it("answers a body over 16 KiB with 413", async () => {
    const body = JSON.stringify(presentation(origin, { statement: "x".repeat(17 * 1024) }));
    expect(Buffer.byteLength(body)).toBeGreaterThan(16 * 1024);
    const response = await call("/gate", { method: "POST", headers: { "content-type": "application/json" }, body });
    const problem = await expectProblem(response, 413, "payload_too_large");
    expect(problem.limit).toMatchObject({ name: "body_bytes", limit: 16 * 1024 });
  });

  it("answers a missing field with 400 bad_request naming it", async () => {
    const { statement: _statement, ...missing } = presentation(origin);
    const response = await call("/gate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(missing) });
    const problem = await expectProblem(response, 400, "bad_request");
    expect(problem.errors?.map((e) => e.path)).toContain("statement");
  });

  it("admits nobody from any of those problems", async () => {
    const { body } = await getJson("/api/peers?limit=500");
    expect(body.peers.some((p: { origin: string }) => p.origin === origin)).toBe(false);
  });
});

describe("text PostgreSQL cannot store, over HTTP", () => {
  it("answers POST /gate with a NUL in its origin with a 400 problem, never a 500, and admits nobody", async () => {
    const origin = `nul-${run}.example`;
    const response = await call("/gate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(presentation(`${origin}\u0000`)),
    });
    const problem = await expectProblem(response, 400, "bad_request");
    expect(problem.detail).toMatch(/^origin: must not contain the NUL character/);
    const peers = await getJson("/api/peers");
    expect(JSON.stringify(peers.body)).not.toContain(origin);
  });
});

describe("leave and return over HTTP, at every address of the door", () => {
  const origin = `live-${run}.example`;
  const LEAVE = ["/api/leave", "/api/live"] as const;
  const RETURN = ["/api/return", "/api/live", "/gate", "/api/gate"] as const;
  /** The body each address needs: the aliases imply the action, /api/live and the gate are told it. */
  const bodyFor = (path: string, action: "leave" | "return", extra: Record<string, unknown> = {}) =>
    path === "/api/leave" || path === "/api/return" ? extra : { action, ...extra };
  const logOf = async (did: string) =>
    ((await getJson("/api/residency/log?limit=500")).body.rows as { did: string; event: string; bed_id?: string }[]).filter((r) => r.did === did);
  const occupancy = async () => (await getJson("/city.json")).body.occupancy as number;

  it("serves the door at /api/live and its aliases /api/leave and /api/return, and the gate's POST, as the registry and /openapi.json say", async () => {
    const live = registry.find((d) => d.name === "live")!;
    const gate = registry.find((d) => d.name === "present-at-gate")!;
    expect(doorPaths(live)).toEqual(["/api/live", "/api/leave", "/api/return"]);
    expect(doorPaths(gate)).toEqual(["/gate", "/api/gate"]);
    const { body: openapi } = await getJson("/openapi.json");
    expect(openapi.paths["/api/live"].post.operationId).toBe("live");
    for (const alias of ["/api/leave", "/api/return"]) expect(openapi.paths[alias].post["x-city-alias-of"], alias).toBe("/api/live");
    expect(openapi.paths["/api/gate"].post["x-city-alias-of"]).toBe("/gate");
    // Every address above is exercised below: a new alias would have to be added here.
    expect(new Set([...LEAVE, ...RETURN])).toEqual(new Set([...doorPaths(live), ...doorPaths(gate)]));
  });

  it(
    "leaves at each leave address and returns at each return address: an exit and a return row each time, a new bed, the census following",
    async () => {
      const admitted = await postJson("/gate", presentation(origin));
      expect(admitted.body.verdict).toBe("admitted");
      const { did, citizen_secret: secret } = admitted.body as { did: string; citizen_secret: string };
      let bed = admitted.body.bed_id as string;
      const beds = new Set([bed]);
      const atStart = await occupancy();
      for (const [i, back] of RETURN.entries()) {
        const away = LEAVE[i % LEAVE.length]!;
        const left = await postJson(away, bodyFor(away, "leave", { wake_on: ["direct_message"] }), bearer(secret));
        expect(left.response.status, `${away}: ${JSON.stringify(left.body)}`).toBe(200);
        expect(left.response.headers.get("content-type")).toBe("application/json; charset=utf-8");
        expect(left.body).toMatchObject({
          action: "leave",
          did,
          residency_status: "away",
          bed_id: null,
          bed_released: bed,
          cannot_wake_host: true,
          delivery: { mode: "poll" },
        });
        expect(left.body.schedule).toMatchObject({ wake_on: ["direct_message"], cursor: left.body.cursor });
        expect(await occupancy(), `after leaving at ${away}`).toBe(atStart - 1);

        const returned = await postJson(back, bodyFor(back, "return", { cursor: left.body.cursor }), bearer(secret));
        expect(returned.response.status, `${back}: ${JSON.stringify(returned.body)}`).toBe(200);
        expect(returned.body).toMatchObject({
          protocol: "CITY-DID/1",
          door: "gate",
          action: "return",
          write: "POST",
          alias: "/api/live",
          cannot_wake_host: true,
          delivery: { mode: "poll" },
          nonceTtlSeconds: 600,
          nonceSource: "gate_nonces",
          returned: true,
          did,
          residency_status: "bound",
        });
        expect(returned.body.nonce).toMatch(/^[0-9a-f]{32}$/);
        expect(returned.body.delta).toMatchObject({
          since: left.body.now_utc,
          locker_bags: 0,
          latest_checkpoint: null,
          checkpoint_hash_verified: null,
          wake: [],
        });
        expect(returned.body.bed_id).toMatch(/^bed-\d+$/);
        expect(beds.has(returned.body.bed_id), `${back} gave a bed already given`).toBe(false);
        bed = returned.body.bed_id;
        beds.add(bed);
        expect(await occupancy(), `after returning at ${back}`).toBe(atStart);
      }
      const rows = await logOf(did);
      expect(rows.map((r) => r.event)).toEqual(["admit", ...RETURN.flatMap(() => ["exit", "return"])]);
      expect(rows.filter((r) => r.event === "return").map((r) => r.bed_id)).toEqual([...beds].slice(1));
      // Returning while bound, at any return address, is a poll: no row, the same bed.
      for (const back of RETURN) {
        const poll = await postJson(back, bodyFor(back, "return"), bearer(secret));
        expect(poll.response.status, back).toBe(200);
        expect(poll.body, back).toMatchObject({ action: "return", returned: false, bed_id: bed });
      }
      expect(await logOf(did)).toHaveLength(rows.length);
      expect((await getJson("/api/residency/log/verify")).body.intact).toBe(true);
    },
    HEAVY_TEST_MS,
  );

  it("refuses without proof, with a contradicting action, or asking for push, and moves nobody", async () => {
    const admitted = await postJson("/gate", presentation(`refusals-${origin}`));
    const { did, citizen_secret: secret } = admitted.body as { did: string; citizen_secret: string };
    for (const [path, action] of [...LEAVE.map((p) => [p, "leave"] as const), ...RETURN.map((p) => [p, "return"] as const)]) {
      for (const headers of [{}, bearer(did)]) {
        const refused = await call(path, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(bodyFor(path, action)),
        });
        // The gate answers verdicts (a return it cannot attribute is filtered, HTTP 200); the live doors a 401.
        if (path === "/gate" || path === "/api/gate") {
          expect(refused.status, path).toBe(200);
          expect(await refused.json(), path).toMatchObject({ verdict: "filtered", rule: "credential" });
        } else await expectProblem(refused, 401, "unauthorized");
      }
    }
    await expectProblem(
      await call("/api/leave", { method: "POST", headers: { "content-type": "application/json", ...bearer(secret) }, body: '{"action":"return"}' }),
      400,
      "bad_request",
    );
    await expectProblem(
      await call("/api/return", { method: "POST", headers: { "content-type": "application/json", ...bearer(secret) }, body: '{"action":"leave"}' }),
      400,
      "bad_request",
    );
    for (const path of RETURN) {
      const problem = await expectProblem(
        await call(path, {
          method: "POST",
          headers: { "content-type": "application/json", ...bearer(secret) },
          body: JSON.stringify(bodyFor(path, "return", { delivery: { mode: "webhook" } })),
        }),
        400,
        "bad_request",
      );
      expect(JSON.stringify(problem), path).toContain("delivery.mode: only poll");
    }
    expect((await logOf(did)).map((r) => r.event)).toEqual(["admit"]);
    expect((await getJson("/residency", bearer(secret))).body.status.residency_status).toBe("bound");
  });
});
