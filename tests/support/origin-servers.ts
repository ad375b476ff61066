import dgram from "node:dgram";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import dnsPacket from "dns-packet";
import ipaddr from "ipaddr.js";

/*
 * What an origin proof (CITY-ORIGIN/1) meets on the network, played by the test on this machine:
 * a DNS server of its own on 127.0.0.1 speaking real DNS wire format (dns-packet), which counts
 * every query it is asked, and HTTP servers that count every request that reaches them.
 */

export type DnsAnswer = { A?: string[]; AAAA?: string[]; TXT?: string[] };

export interface TestDns {
  port: number;
  /** Every question asked, in order (lowercase name and type). */
  queries: { name: string; type: string }[];
  /** Sets a name's records; a function is asked with how many queries of that type the name had before this one. */
  set: (name: string, answer: DnsAnswer | ((type: string, asked: number) => DnsAnswer)) => void;
  asked: (name: string, type?: string) => number;
  stop: () => Promise<void>;
}

export async function startTestDns(): Promise<TestDns> {
  const zone = new Map<string, DnsAnswer | ((type: string, asked: number) => DnsAnswer)>();
  const queries: { name: string; type: string }[] = [];
  const asked = (name: string, type?: string) => queries.filter((q) => q.name === name.toLowerCase() && (!type || q.type === type)).length;
  const socket = dgram.createSocket("udp4");
  socket.on("message", (message, from) => {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    const before = asked(name, question.type);
    queries.push({ name, type: question.type });
    const entry = zone.get(name);
    const records = typeof entry === "function" ? entry(question.type, before) : entry;
    const data = (records?.[question.type as keyof DnsAnswer] ?? []) as string[];
    const answers = data.map((value) =>
      question.type === "TXT"
        ? { type: "TXT" as const, name: question.name, ttl: 1, class: "IN" as const, data: [value] }
        : { type: question.type as "A" | "AAAA", name: question.name, ttl: 1, class: "IN" as const, data: value },
    );
    const reply = dnsPacket.encode({
      type: "response",
      id: query.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
      questions: [question],
      answers,
    });
    socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return {
    port: (socket.address() as AddressInfo).port,
    queries,
    set: (name, answer) => zone.set(name.toLowerCase(), answer),
    asked,
    stop: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

export type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void;

export interface CountingServer {
  port: number;
  address: string;
  /** Requests received, by Host header. */
  hits: (host?: string) => number;
  /** What the server does for a Host (the default answers 404). */
  on: (host: string, handler: Handler) => void;
  stop: () => Promise<void>;
}

/** An HTTP server on `address` (port 0: any free one) that counts every request and answers by Host. */
export async function startCountingServer(address: string, port = 0): Promise<CountingServer> {
  const handlers = new Map<string, Handler>();
  const received: string[] = [];
  const server = http.createServer((request, response) => {
    const host = (request.headers.host ?? "").toLowerCase();
    received.push(host);
    const handler = handlers.get(host);
    if (handler) return handler(request, response);
    response.writeHead(404, { "content-type": "text/plain" }).end("not here\n");
  });
  const open = new Set<import("node:net").Socket>();
  server.on("connection", (socket) => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, address, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    address,
    hits: (host) => (host ? received.filter((h) => h === host.toLowerCase()).length : received.length),
    on: (host, handler) => handlers.set(host.toLowerCase(), handler),
    stop: () =>
      new Promise((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * An address of this machine that the guard must refuse (a private one first: an IPv6 unique local
 * or an RFC 1918 address, else any other special-purpose one), so a server listening there is
 * really reachable and counts what would reach it. Null on a machine with none.
 */
export function forbiddenLocalAddress(): string | null {
  const addresses = Object.values(os.networkInterfaces())
    .flat()
    .filter((a): a is os.NetworkInterfaceInfo => Boolean(a) && !a!.internal && !a!.address.startsWith("fe80"))
    .map((a) => a.address);
  const range = (a: string) => ipaddr.parse(a).range();
  return addresses.find((a) => ["private", "uniqueLocal"].includes(range(a))) ?? addresses.find((a) => range(a) !== "unicast") ?? null;
}
