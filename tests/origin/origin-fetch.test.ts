import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DnsFailure, queryDns } from "@/lib/city/origin/dns";
import { originDomain } from "@/lib/city/origin/domain";
import { fetchWellKnown } from "@/lib/city/origin/guarded-fetch";
import { forgetEnv } from "@/lib/env";
import { type CountingServer, forbiddenLocalAddress, startCountingServer, startTestDns, type TestDns } from "../support/origin-servers";

/*
 * The guarded fetch of CITY-ORIGIN/1 in process (the HTTP suite, tests/origin/http/origin.test.ts, runs the
 * same guards through `next start`): the city's DNS client against a resolver of the test's own in
 * DNS wire format, and the fetch against servers that count what reaches them. The deadline is a
 * parameter, so the slow server's test waits half a second, not five.
 */

let dns: TestDns;
let good: CountingServer;
const forbidden: CountingServer[] = [];
let inward: string | null;

beforeAll(async () => {
  dns = await startTestDns();
  good = await startCountingServer("127.0.0.1");
  inward = forbiddenLocalAddress();
  if (inward) for (const port of [good.port, 0]) forbidden.push(await startCountingServer(inward, port));
  process.env.CITY_DNS_SERVERS = `127.0.0.1:${dns.port}`;
  process.env.CITY_BASE_URL = "http://127.0.0.1:1";
  forgetEnv();
});

afterAll(async () => {
  await dns.stop();
  await good.stop();
  for (const server of forbidden) await server.stop();
  forgetEnv();
});

let n = 0;
const fresh = (what: string) => `${what}-${++n}-${Math.random().toString(36).slice(2, 7)}.test`;
const domainOf = (name: string, port = good.port) => {
  const named = originDomain(`http://${name}:${port}`, { insecure: true });
  if (!named.ok) throw new Error(named.problem);
  return named.value;
};
const look = (name: string, { ms = 5000, insecure = true, port = good.port } = {}) =>
  fetchWellKnown(domainOf(name, port), { insecure, deadline: Date.now() + ms });
const noneForbidden = () => {
  for (const server of forbidden) expect(server.hits(), `${server.address}:${server.port}`).toBe(0);
};

describe("the origin check's guarded fetch", () => {
  it("reads the file of a name resolved once, from the address it gave", async () => {
    const name = fresh("good");
    dns.set(name, { A: ["127.0.0.1"] });
    good.on(`${name}:${good.port}`, (_q, r) => void r.writeHead(200, { "content-type": "text/plain" }).end("one\ntwo\n"));
    const outcome = await look(name);
    expect(outcome).toMatchObject({ kind: "answered", status: 200, address: "127.0.0.1", body: "one\ntwo\n", contentType: "text/plain" });
    expect(dns.asked(name, "A")).toBe(1);
    expect(dns.asked(name, "AAAA")).toBe(1);
  });

  it("never connects to loopback outside insecure mode", async () => {
    const name = fresh("loop");
    dns.set(name, { A: ["127.0.0.1"] });
    const outcome = await look(name, { insecure: false });
    expect(outcome).toMatchObject({ kind: "refused", address: null });
    expect(good.hits(`${name}:${good.port}`)).toBe(0);
  });

  it("refuses a name that resolves to a private address, and one that resolves to a public and a private one", async () => {
    for (const records of [inward?.includes(":") ? { AAAA: [inward] } : { A: [inward ?? "10.0.0.1"] }, { A: ["127.0.0.1", "10.1.2.3"] }]) {
      const name = fresh("private");
      dns.set(name, records);
      const outcome = await look(name, { port: forbidden[1]?.port ?? good.port });
      expect(outcome.kind).toBe("refused");
      expect(outcome.kind === "refused" ? outcome.reason : "").toMatch(/private|special-purpose/);
      expect(good.hits(`${name}:${good.port}`)).toBe(0);
    }
    noneForbidden();
  });

  it("follows no redirect", async () => {
    const name = fresh("redirect");
    dns.set(name, { A: ["127.0.0.1"] });
    const at = (a: string) => (a.includes(":") ? `[${a}]` : a);
    const target = forbidden[1] ? `http://${at(forbidden[1].address)}:${forbidden[1].port}/.well-known/city-did` : "http://10.0.0.1/";
    good.on(`${name}:${good.port}`, (_q, r) => void r.writeHead(301, { location: target }).end());
    const outcome = await look(name);
    expect(outcome.kind === "refused" ? outcome.reason : "").toMatch(/^answered 301, a redirect to .* follows no redirect$/);
    noneForbidden();
  });

  it("gives up at the deadline on a server that never finishes", async () => {
    const name = fresh("slow");
    dns.set(name, { A: ["127.0.0.1"] });
    good.on(`${name}:${good.port}`, (_q, r) => void r.writeHead(200, { "content-type": "text/plain" }).write("partial\n"));
    const outcome = await look(name, { ms: 500 });
    expect(outcome).toMatchObject({ kind: "refused", reason: "no complete answer within 5 s" });
  });

  it("reads at most 4096 bytes: a longer body is refused, announced or not", async () => {
    for (const announced of [false, true]) {
      const name = fresh("large");
      dns.set(name, { A: ["127.0.0.1"] });
      const body = "x".repeat(4097);
      good.on(`${name}:${good.port}`, (_q, r) => {
        r.writeHead(200, { "content-type": "text/plain", ...(announced ? { "content-length": String(body.length) } : {}) });
        if (announced) r.end(body);
        else for (let i = 0; i < body.length; i += 1000) r.write(body.slice(i, i + 1000));
      });
      const outcome = await look(name);
      expect(outcome.kind === "refused" ? outcome.reason : "").toMatch(announced ? /announced 4097 bytes/ : /more than 4096 bytes/);
    }
    // Exactly 4096 is read whole.
    const name = fresh("edge");
    dns.set(name, { A: ["127.0.0.1"] });
    good.on(`${name}:${good.port}`, (_q, r) => void r.writeHead(200, { "content-type": "text/plain" }).end("y".repeat(4096)));
    expect(await look(name)).toMatchObject({ kind: "answered", bytes: 4096 });
  });

  it("asks once under DNS rebinding and connects to the first answer", async () => {
    const name = fresh("rebind");
    dns.set(name, (type, asked) =>
      asked === 0 ? (type === "A" ? { A: ["127.0.0.1"] } : {}) : inward?.includes(":") ? { AAAA: [inward] } : { A: [inward ?? "10.0.0.1"] },
    );
    good.on(`${name}:${good.port}`, (_q, r) => void r.writeHead(200, { "content-type": "text/plain" }).end("ok\n"));
    expect(await look(name)).toMatchObject({ kind: "answered", address: "127.0.0.1", status: 200 });
    expect(dns.asked(name, "A")).toBe(1);
    expect(dns.asked(name)).toBe(2);
    expect(good.hits(`${name}:${good.port}`)).toBe(1);
    noneForbidden();
  });

  it("reads TXT records in wire format, and says when no server answers", async () => {
    const name = `_city.${fresh("txt")}`;
    dns.set(name, { TXT: ["did=abc", "v=spf1 -all"] });
    expect(await queryDns(name, "TXT")).toEqual(["did=abc", "v=spf1 -all"]);
    expect(await queryDns(fresh("none"), "TXT")).toEqual([]);
    // A port where nothing answers: a DnsFailure at the deadline, never a hang.
    await expect(queryDns(name, "TXT", Date.now() + 300, [{ address: "127.0.0.1", port: good.port }])).rejects.toBeInstanceOf(DnsFailure);
  });
});
