import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { signRequest } from "@/lib/sign-request";
import { presentation } from "../../support/gate";
import { HEAVY_TEST_MS } from "../../support/limits";
import { type CountingServer, forbiddenLocalAddress, startCountingServer, startTestDns, type TestDns } from "../../support/origin-servers";
import { useOwnServer } from "../../support/own-server";
import { describeOnServer, usePostgresCity } from "../../support/postgres-city";
import { newKey, type TestKey } from "../../support/signed";

/*
 * Origins proven, not claimed (CITY-ORIGIN/1, issue 44), through `next start` on PGlite and on
 * PostgreSQL (node-postgres): a proof by HTTPS (insecure mode: a local http server) and by DNS (a
 * resolver of the test's own on 127.0.0.1, CITY_DNS_SERVERS), shown in the directory, /peers/{did}
 * (JSON and page), the plat and the identity log; refusals that say what was found; and each guard
 * of the city's own fetch, with the servers counting what reaches them: 0 requests to any address
 * the guards forbid, and exactly one lookup of a name per check.
 */

// Each test makes a loop of door calls and proofs (31 tries, a proof shown on four pages): its
// limit only has to hold on a loaded machine (a clean-clone CI run beside other work took 30.1 and
// 30.5 s for two of them on PGlite, 14.8 and 19.6 s on PostgreSQL).
vi.setConfig({ testTimeout: HEAVY_TEST_MS });

type Answer = { status: number; type: string; headers: Headers; body: Record<string, any>; text: string };

interface Net {
  dns: TestDns;
  /** The proof server: 127.0.0.1, every allowed origin's port. */
  good: CountingServer;
  /** Servers on addresses the guards forbid (this machine's private address, or none): each must see 0 requests. */
  forbidden: CountingServer[];
  forbiddenAddress: string | null;
  env: Record<string, string>;
}

/** The network of one suite: started before its city (whose environment names the resolver). */
function useNetwork(): () => Net {
  const net = { env: {} as Record<string, string> } as Net;
  beforeAll(async () => {
    net.dns = await startTestDns();
    net.good = await startCountingServer("127.0.0.1");
    net.forbiddenAddress = forbiddenLocalAddress();
    net.forbidden = [];
    if (net.forbiddenAddress) {
      // On the proof server's port too, so a name rebound to this address would be served here.
      for (const port of [net.good.port, 0]) net.forbidden.push(await startCountingServer(net.forbiddenAddress, port));
    }
    Object.assign(net.env, {
      CITY_DNS_SERVERS: `127.0.0.1:${net.dns.port}`,
      CITY_ORIGIN_PROOF_INSECURE: "1",
      CITY_GATE_PER_ORIGIN_PER_HOUR: "100000",
      CITY_GATE_PER_ADDRESS_PER_HOUR: "0",
      // Every try comes from 127.0.0.1: no network's share binds here (tests/origin/origin-shares.test.ts has its own).
      CITY_ORIGIN_SOURCE_SHARE_PERCENT: "100",
    });
  });
  afterAll(async () => {
    await net.dns?.stop();
    await net.good?.stop();
    for (const server of net.forbidden ?? []) await server.stop();
  });
  return () => net;
}

/** Every check of the suite, against the city at `base()`; `psql` only where the database can be edited beside the server. */
function originSuite(net: () => Net, base: () => string, psql?: () => (sql: string) => Promise<string>) {
  let n = 0;
  const label = (what: string) => `${what}-${++n}-${Math.random().toString(36).slice(2, 7)}`;

  async function call(path: string, init: RequestInit = {}): Promise<Answer> {
    const response = await fetch(`${base()}${path}`, init);
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    return { status: response.status, type, headers: response.headers, body: type.includes("json") ? JSON.parse(text) : {}, text };
  }
  const verify = (bearer: string, method: "https" | "dns") =>
    call("/api/origin/verify", {
      method: "POST",
      headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
      body: JSON.stringify({ method }),
    });
  const drop = (bearer: string) => call("/api/origin/verify", { method: "DELETE", headers: { authorization: `Bearer ${bearer}` } });

  async function admit(origin: string, key?: TestKey): Promise<{ did: string; citizen_secret: string }> {
    let extra = {};
    if (key) {
      const nonce = (await call("/gate")).body.nonce as string;
      extra = { nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) };
    }
    const answer = await call("/gate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(presentation({ origin, ...extra })),
    });
    expect(answer.body.verdict, JSON.stringify(answer.body)).toBe("admitted");
    return answer.body as { did: string; citizen_secret: string };
  }

  /** A name of the test's zone, served by the proof server: its origin text and the Host the city sends. */
  function served(name: string, lines: (did: string) => string[], did: () => string) {
    const host = `${name}:${net().good.port}`;
    net().dns.set(name, { A: ["127.0.0.1"] });
    net().good.on(host, (_req, res) => void res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(lines(did()).join("\n") + "\n"));
    return { origin: `http://${host}`, host };
  }

  const expectProblem = (answer: Answer, status: number, code: string) => {
    expect(answer.status, answer.text).toBe(status);
    expect(answer.type).toMatch(/^application\/problem\+json/);
    expect(answer.body.code, answer.text).toBe(code);
  };
  const noneForbidden = () => {
    for (const server of net().forbidden) expect(server.hits(), `requests that reached ${server.address}:${server.port}`).toBe(0);
  };

  async function identityRows(did: string): Promise<Record<string, any>[]> {
    const rows: Record<string, any>[] = [];
    for (let after = 0; ;) {
      const page = await call(`/api/identity/log?after=${after}&limit=500`);
      rows.push(...(page.body.rows as Record<string, any>[]));
      if (page.body.next_after === null) break;
      after = page.body.next_after as number;
    }
    // Its origin events (a citizen admitted with a key also has its key-bound row).
    return rows.filter((r) => r.did === did && String(r.event).startsWith("origin-"));
  }

  it("proves an origin by HTTPS (a local http server, insecure mode), shown in the directory, /peers/{did}, the plat and the identity log; DELETE drops it", async () => {
    const name = `${label("good")}.test`;
    let did = "";
    const site = served(
      name,
      (d) => ["# CITY citizens of this operator", "a".repeat(64), d],
      () => did,
    );
    const citizen = await admit(site.origin);
    did = citizen.did;

    const proven = await verify(citizen.citizen_secret, "https");
    expect(proven.status, proven.text).toBe(200);
    const proof = proven.body.origin_proof;
    expect(proof).toMatchObject({ domain: site.host, method: "https" });
    expect(Date.parse(proof.expires_at) - Date.parse(proof.verified_at)).toBe(30 * 86_400_000);
    expect(proven.body.looked_at).toBe(`http://${site.host}/.well-known/city-did`);
    expect(proven.body.identity_log_receipt).toBeTruthy();
    expect(net().good.hits(site.host)).toBe(1);
    // Resolved once: one A and one AAAA question, no more.
    expect(net().dns.asked(name, "A")).toBe(1);
    expect(net().dns.asked(name, "AAAA")).toBe(1);

    const row = (await call("/api/peers?limit=500")).body.peers.find((p: { fingerprint: string }) => p.fingerprint === did);
    expect(row.origin_proof).toEqual(proof);
    expect((await call(`/api/peers/${did}`)).body.peer.origin_proof).toEqual(proof);
    const provenOnly = await call("/api/peers?origin_proven=true&limit=500");
    expect(provenOnly.body.peers.map((p: { fingerprint: string }) => p.fingerprint)).toContain(did);
    expect(provenOnly.body.peers.every((p: { origin_proof: unknown }) => p.origin_proof !== null)).toBe(true);
    // The plat: the citizen's page and the directory mark it proven, and say what proven means.
    const page = await call(`/peers/${did}`);
    expect(page.text).toContain('data-origin="proven"');
    expect(page.text).toContain(`proven: ${site.host}`);
    const list = await call("/peers?limit=100");
    expect(list.text).toMatch(new RegExp(`data-peer="${did}"[^]*?data-origin="proven"`));
    expect(list.text).toContain("every other origin is only claimed");
    const logged = await identityRows(did);
    expect(logged.map((r) => r.event)).toEqual(["origin-proven"]);
    expect(logged[0]).toMatchObject({ domain: site.host, method: "https", expires_at: proof.expires_at });

    const dropped = await drop(citizen.citizen_secret);
    expect(dropped.status, dropped.text).toBe(200);
    expect(dropped.body).toMatchObject({ origin_proof: null, dropped: proof });
    expect((await call(`/api/peers/${did}`)).body.peer.origin_proof).toBeNull();
    expect((await call("/api/peers?origin_proven=true&limit=500")).body.peers.map((p: { fingerprint: string }) => p.fingerprint)).not.toContain(did);
    expect((await identityRows(did)).map((r) => r.event)).toEqual(["origin-proven", "origin-dropped"]);
    expect((await call(`/peers/${did}`)).text).toContain('data-origin="claimed"');
    // Nothing more to drop: no change, no row.
    expect((await drop(citizen.citizen_secret)).body.dropped).toBeNull();
    expect(await identityRows(did)).toHaveLength(2);
    noneForbidden();
  });

  it("proves an origin by DNS (a TXT record at _city.<domain>) with a request signed as the signing helper signs it; a session token is refused", async () => {
    const domain = `${label("dns")}.test`;
    const key = await newKey();
    const citizen = await admit(domain, key);
    net().dns.set(`_city.${domain}`, { TXT: ["v=other", `did=${citizen.did}`] });

    const token = await call("/api/tokens", {
      method: "POST",
      headers: { authorization: `Bearer ${citizen.citizen_secret}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(token.status, token.text).toBe(200);
    expectProblem(await verify(token.body.token as string, "dns"), 403, "forbidden");

    const url = `${base()}/api/origin/verify`;
    const body = JSON.stringify({ method: "dns" });
    const headers = await signRequest({ method: "POST", url, body, privateKey: key.seed });
    const proven = await call("/api/origin/verify", { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
    expect(proven.status, proven.text).toBe(200);
    expect(proven.body.origin_proof).toMatchObject({ domain, method: "dns" });
    expect(proven.body.looked_at).toBe(`TXT _city.${domain}`);
    expect(net().dns.asked(`_city.${domain}`, "TXT")).toBe(1);
    // DNS proves without a fetch: the domain's own name was never asked for.
    expect(net().dns.asked(domain)).toBe(0);
    expect((await identityRows(citizen.did)).map((r) => [r.event, r.method, r.domain])).toEqual([["origin-proven", "dns", domain]]);
    expect((await call(`/peers/${citizen.did}`)).text).toContain("a DNS TXT record at _city.");
  });

  it("refuses a file naming another DID, a missing file and a missing record with origin_unverified, saying what it found and expected; nothing changes", async () => {
    const other = "b".repeat(64);
    const wrong = served(
      `${label("wrong")}.test`,
      () => [other],
      () => "",
    );
    const citizen = await admit(wrong.origin);
    const refused = await verify(citizen.citizen_secret, "https");
    expectProblem(refused, 422, "origin_unverified");
    expect(refused.body.origin_check).toMatchObject({ method: "https", domain: wrong.host, found: { status: 200, lines: [other] } });
    expect(refused.body.origin_check.expected).toContain(citizen.did);
    expect(refused.body.detail).toContain("none of them this citizen's DID");

    const missingName = `${label("missing")}.test`;
    net().dns.set(missingName, { A: ["127.0.0.1"] });
    const missing = await admit(`http://${missingName}:${net().good.port}`);
    const notFound = await verify(missing.citizen_secret, "https");
    expectProblem(notFound, 422, "origin_unverified");
    expect(notFound.body.origin_check.found).toMatchObject({ status: 404 });
    expect(notFound.body.detail).toContain("status 404");

    const noRecord = await verify(missing.citizen_secret, "dns");
    expectProblem(noRecord, 422, "origin_unverified");
    expect(noRecord.body.origin_check).toMatchObject({ method: "dns", looked_at: `TXT _city.${missingName}`, found: { records: [] } });

    const unprovable = await admit(`my ${label("agent")} of nowhere`);
    const free = await verify(unprovable.citizen_secret, "https");
    expectProblem(free, 422, "origin_unverified");
    expect(free.body.detail).toContain("cannot be proven");

    for (const did of [citizen.did, missing.did, unprovable.did]) {
      expect((await call(`/api/peers/${did}`)).body.peer.origin_proof).toBeNull();
      expect(await identityRows(did)).toEqual([]);
    }
    noneForbidden();
  });

  it("guard: a name that resolves to a private address is refused before any connection", async () => {
    const name = `${label("private")}.test`;
    const address = net().forbiddenAddress ?? "10.0.0.1";
    net().dns.set(name, address.includes(":") ? { AAAA: [address] } : { A: [address] });
    const citizen = await admit(`http://${name}:${net().forbidden[1]?.port ?? net().good.port}`);
    const refused = await verify(citizen.citizen_secret, "https");
    expectProblem(refused, 422, "origin_unverified");
    expect(refused.body.origin_check.found.problem).toMatch(/private|special-purpose/);
    expect(refused.body.origin_check.found.problem).toContain("public unicast addresses only");
    noneForbidden();

    // The city's own address (a development city: loopback, its own port) is never a target.
    const own = `${label("own")}.test`;
    net().dns.set(own, { A: ["127.0.0.1"] });
    const self = await admit(`http://${own}:${new URL(base()).port}`);
    const itself = await verify(self.citizen_secret, "https");
    expectProblem(itself, 422, "origin_unverified");
    expect(itself.body.origin_check.found.problem).toContain("the city's own address");

    // A name that is public and private at once is refused whole.
    const mixed = `${label("mixed")}.test`;
    net().dns.set(mixed, { A: ["127.0.0.1", "10.0.0.1"] });
    const both = await admit(`http://${mixed}:${net().good.port}`);
    expectProblem(await verify(both.citizen_secret, "https"), 422, "origin_unverified");
    expect(net().good.hits(`${mixed}:${net().good.port}`)).toBe(0);
  });

  it("guard: a redirect is not followed", async () => {
    const name = `${label("redirect")}.test`;
    const host = `${name}:${net().good.port}`;
    net().dns.set(name, { A: ["127.0.0.1"] });
    const inward = net().forbidden[1];
    const at = (a: string) => (a.includes(":") ? `[${a}]` : a);
    const target = inward ? `http://${at(inward.address)}:${inward.port}/.well-known/city-did` : "http://10.0.0.1/";
    net().good.on(host, (_req, res) => void res.writeHead(302, { location: target }).end());
    const citizen = await admit(`http://${host}`);
    const refused = await verify(citizen.citizen_secret, "https");
    expectProblem(refused, 422, "origin_unverified");
    expect(refused.body.origin_check.found.problem).toMatch(/302, a redirect to .*follows no redirect/);
    expect(net().good.hits(host)).toBe(1);
    noneForbidden();
  });

  // The slow server's try is sent before the suite's first test and awaited in its own: the city
  // waits its 5 s (outside any transaction) while the other tests run (this one is the suite's last).
  let slowTry: Promise<Answer> | undefined;
  beforeAll(async () => {
    const name = `${label("slow")}.test`;
    const host = `${name}:${net().good.port}`;
    net().dns.set(name, { A: ["127.0.0.1"] });
    // Headers at once, then the body never ends.
    net().good.on(host, (_req, res) => void res.writeHead(200, { "content-type": "text/plain" }).write("partial\n"));
    const citizen = await admit(`http://${host}`);
    slowTry = verify(citizen.citizen_secret, "https");
    // Awaited in the test; a failure before then is not an unhandled rejection.
    slowTry.catch(() => {});
  });

  it("guard: at most 4 KB is read (a longer body is refused, the DID at its end never read)", async () => {
    let did = "";
    const name = `${label("large")}.test`;
    const host = `${name}:${net().good.port}`;
    net().dns.set(name, { A: ["127.0.0.1"] });
    net().good.on(host, (_req, res) => {
      // Chunked (no Content-Length): the city must count what it reads.
      res.writeHead(200, { "content-type": "text/plain" });
      for (let i = 0; i < 100; i++) res.write(`${"c".repeat(63)}\n`);
      res.end(`${did}\n`);
    });
    const citizen = await admit(`http://${host}`);
    did = citizen.did;
    const refused = await verify(citizen.citizen_secret, "https");
    expectProblem(refused, 422, "origin_unverified");
    expect(refused.body.origin_check.found.problem).toContain("more than 4096 bytes");
    expect((await call(`/api/peers/${did}`)).body.peer.origin_proof).toBeNull();
  });

  it("guard: DNS rebinding: the name is asked once, and the connection goes to that answer", async () => {
    let did = "";
    const name = `${label("rebind")}.test`;
    const host = `${name}:${net().good.port}`;
    const inward = net().forbiddenAddress;
    // The first answer is the proof server; every later one points inward.
    net().dns.set(name, (type, asked) =>
      asked === 0 ? (type === "A" ? { A: ["127.0.0.1"] } : {}) : inward?.includes(":") ? { AAAA: [inward] } : { A: [inward ?? "10.0.0.1"] },
    );
    net().good.on(host, (_req, res) => void res.writeHead(200, { "content-type": "text/plain" }).end(`${did}\n`));
    const citizen = await admit(`http://${host}`);
    did = citizen.did;
    const proven = await verify(citizen.citizen_secret, "https");
    expect(proven.status, proven.text).toBe(200);
    expect(net().dns.asked(name, "A")).toBe(1);
    expect(net().dns.asked(name)).toBe(2);
    expect(net().good.hits(host)).toBe(1);
    noneForbidden();
  });

  it("guard: a citizen's 11th try within the hour is refused (429) and reaches no server", async () => {
    const name = `${label("tries")}.test`;
    const host = `${name}:${net().good.port}`;
    net().dns.set(name, { A: ["127.0.0.1"] });
    const citizen = await admit(`http://${host}`);
    for (let i = 0; i < 10; i++) expectProblem(await verify(citizen.citizen_secret, "https"), 422, "origin_unverified");
    const eleventh = await verify(citizen.citizen_secret, "https");
    expectProblem(eleventh, 429, "rate_limited");
    expect(Number(eleventh.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(eleventh.body.limit).toMatchObject({ limit: 10, window_seconds: 3600 });
    expect(net().good.hits(host)).toBe(10);
    expect(net().dns.asked(name, "A")).toBe(10);
    // A DNS try counts the same: the citizen's hour is spent whichever method it asks.
    expectProblem(await verify(citizen.citizen_secret, "dns"), 429, "rate_limited");
  });

  it("guard: a domain's 31st try within the hour is refused, whichever citizen asks", async () => {
    const name = `${label("busy")}.test`;
    const host = `${name}:${net().good.port}`;
    net().dns.set(name, { A: ["127.0.0.1"] });
    const citizens = [];
    for (let i = 0; i < 4; i++) citizens.push(await admit(`http://${host}`));
    for (const c of citizens.slice(0, 3)) for (let i = 0; i < 10; i++) expectProblem(await verify(c.citizen_secret, "https"), 422, "origin_unverified");
    const refused = await verify(citizens[3]!.citizen_secret, "https");
    expectProblem(refused, 429, "rate_limited");
    expect(refused.body.detail).toContain(`origin proof tries for ${host}`);
    expect(net().good.hits(host)).toBe(30);
  });

  it("publishes the insecure mode and the tries' limits in /api/capabilities", async () => {
    const caps = (await call("/api/capabilities")).body;
    expect(caps.origin_proofs).toMatchObject({
      protocol: "CITY-ORIGIN/1",
      insecure: true,
      proof_days: 30,
      fetch: { timeout_ms: 5000, max_bytes: 4096, dns_timeout_ms: 3000, redirects: 0 },
    });
    expect(caps.origin_proofs.note).toContain("INSECURE MODE");
    expect(caps.origin_proofs.tries.map((l: { name: string; limit: number }) => [l.name, l.limit])).toEqual([
      ["origin_tries_per_citizen", 10],
      ["origin_tries_per_domain", 30],
      ["origin_tries_city", 300],
    ]);
  });

  if (psql) {
    it("shows a proof past its expires_at as lapsed (directory, /peers/{did}, plat) and leaves it out of origin_proven=true", async () => {
      let did = "";
      const site = served(
        `${label("lapse")}.test`,
        (d) => [d],
        () => did,
      );
      const citizen = await admit(site.origin);
      did = citizen.did;
      expect((await verify(citizen.citizen_secret, "https")).status).toBe(200);
      await psql()(`UPDATE citizens SET origin_verified_at = now() - interval '31 days', origin_expires_at = now() - interval '1 day' WHERE did = '${did}'`);
      const proof = (await call(`/api/peers/${did}`)).body.peer.origin_proof;
      expect(proof).toMatchObject({ domain: site.host, method: "https" });
      expect(Date.parse(proof.expires_at)).toBeLessThan(Date.now());
      expect((await call("/api/peers?origin_proven=true&limit=500")).body.peers.map((p: { fingerprint: string }) => p.fingerprint)).not.toContain(did);
      const page = await call(`/peers/${did}`);
      expect(page.text).toContain('data-origin="lapsed"');
      expect(page.text).toContain("lapsed on");
      // Verified again, it stands again.
      const again = await verify(citizen.citizen_secret, "https");
      expect(again.status, again.text).toBe(200);
      expect((await call("/api/peers?origin_proven=true&limit=500")).body.peers.map((p: { fingerprint: string }) => p.fingerprint)).toContain(did);
    });
  }

  it("guard: a server that does not answer within 5 s is left", async () => {
    const refused = await slowTry!;
    expectProblem(refused, 422, "origin_unverified");
    expect(refused.body.origin_check.found.problem).toBe("no complete answer within 5 s");
  });
}

describe("CITY-ORIGIN/1 through `next start` on PGlite", () => {
  const net = useNetwork();
  const server = useOwnServer(net().env ?? {});
  originSuite(net, server);
});

describeOnServer("CITY-ORIGIN/1 through `next start` on PostgreSQL (node-postgres)", () => {
  const net = useNetwork();
  const city = usePostgresCity("origin", () => ({ CITY_DB_DRIVER: "pg", ...net().env }));
  originSuite(
    net,
    () => city().server.baseUrl,
    () => city().psql,
  );

  it("counts a citizen's tries in the database under parallel requests: 15 at once, exactly 10 reach the server", async () => {
    const name = `race-${Math.random().toString(36).slice(2, 7)}.test`;
    const host = `${name}:${net().good.port}`;
    net().dns.set(name, { A: ["127.0.0.1"] });
    const admitted = await city().post("/gate", presentation({ origin: `http://${host}` }));
    const secret = admitted.body.citizen_secret as string;
    const race = await city().race(15, () =>
      city().call("/api/origin/verify", {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: '{"method":"https"}',
      }),
    );
    expect(race.statuses.filter((s) => s === 422)).toHaveLength(10);
    expect(race.statuses.filter((s) => s === 429)).toHaveLength(5);
    expect(net().good.hits(host)).toBe(10);
  });
});
