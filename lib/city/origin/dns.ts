import { randomInt } from "node:crypto";
import dgram from "node:dgram";
import { getServers } from "node:dns";
import dnsPacket from "dns-packet";
import ipaddr from "ipaddr.js";
import { env } from "@/lib/env";

/*
 * The city's own DNS client for origin proofs (CITY-ORIGIN/1): one UDP query per name and type to
 * the servers of CITY_DNS_SERVERS (the system's when unset), in DNS wire format by dns-packet (a
 * well-kept encoder and decoder, so the city writes no parser of its own for what a network
 * answers). Its own client, not the system's resolver, so that a check asks exactly once and the
 * tests can point the city at a resolver of their own. An answer is taken only from the server
 * asked, with the query's id and question; a truncated answer is not retried over TCP (an origin
 * proof needs one short record).
 */

export const DNS_TIMEOUT_MS = 3000;

export interface DnsServer {
  address: string;
  port: number;
}

export type DnsType = "A" | "AAAA" | "TXT";

export class DnsFailure extends Error {
  override name = "DnsFailure";
}

/** The servers asked, in order: CITY_DNS_SERVERS, else the system's (port 53 unless it names one). */
export function dnsServers(configured: string | undefined = env().CITY_DNS_SERVERS): DnsServer[] {
  const entries = configured ? configured.split(",").map((e) => e.trim()) : getServers();
  return entries.filter(Boolean).map(parseServer);
}

function parseServer(entry: string): DnsServer {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { address: bracketed[1]!, port: Number(bracketed[2] ?? 53) };
  if (ipaddr.isValid(entry)) return { address: entry, port: 53 };
  const colon = entry.lastIndexOf(":");
  return { address: entry.slice(0, colon), port: Number(entry.slice(colon + 1)) };
}

/**
 * The records of one name and type: addresses for A and AAAA, each TXT record's strings joined
 * (RFC 7208 3.3). A name that does not exist, or has none of that type, is an empty list. Throws
 * DnsFailure when no server answers within the time left before `deadline` (at most 3 s in all).
 */
export async function queryDns(
  name: string,
  type: DnsType,
  deadline: number = Date.now() + DNS_TIMEOUT_MS,
  servers: DnsServer[] = dnsServers(),
): Promise<string[]> {
  const end = Math.min(deadline, Date.now() + DNS_TIMEOUT_MS);
  let last = "no DNS server is configured";
  for (const server of servers) {
    if (Date.now() >= end) break;
    try {
      return await askServer(server, name, type, end);
    } catch (error) {
      last = error instanceof DnsFailure ? error.message : "the DNS server could not be reached";
    }
  }
  throw new DnsFailure(Date.now() >= end ? `no DNS answer for ${name} (${type}) within ${DNS_TIMEOUT_MS / 1000} s` : last);
}

function askServer(server: DnsServer, name: string, type: DnsType, end: number): Promise<string[]> {
  const id = randomInt(0, 65536);
  const query = dnsPacket.encode({
    type: "query",
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: "IN" }],
  });
  const socket = dgram.createSocket(ipaddr.parse(server.address).kind() === "ipv6" ? "udp6" : "udp4");
  return new Promise<string[]>((resolve, reject) => {
    let settled = false;
    const finish = (error: Error | null, records?: string[]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.close();
      if (error) reject(error);
      else resolve(records!);
    };
    const timer = setTimeout(
      () => finish(new DnsFailure(`no DNS answer for ${name} (${type}) within ${DNS_TIMEOUT_MS / 1000} s`)),
      Math.max(0, end - Date.now()),
    );
    socket.on("error", () => finish(new DnsFailure("the DNS server could not be reached")));
    socket.on("message", (message, from) => {
      // Only the server asked, answering this query: anything else on the socket is ignored.
      if (!ipaddr.isValid(from.address) || ipaddr.process(from.address).toString() !== ipaddr.process(server.address).toString() || from.port !== server.port)
        return;
      let packet: dnsPacket.DecodedPacket;
      try {
        packet = dnsPacket.decode(message);
      } catch {
        return;
      }
      const question = packet.questions?.[0];
      if (packet.type !== "response" || packet.id !== id || !question || question.name.toLowerCase() !== name.toLowerCase() || question.type !== type) return;
      if ((packet.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) return finish(new DnsFailure(`the DNS answer for ${name} (${type}) was truncated`));
      // dns-packet decodes the response code as text (its types leave it out).
      const rcode = (packet as { rcode?: string }).rcode;
      if (rcode === "NXDOMAIN") return finish(null, []);
      if (rcode && rcode !== "NOERROR") return finish(new DnsFailure(`the DNS server answered ${rcode} for ${name} (${type})`));
      finish(null, recordsOf(packet, type));
    });
    socket.send(query, server.port, server.address, (error) => {
      if (error) finish(new DnsFailure("the DNS server could not be reached"));
    });
  });
}

function recordsOf(packet: dnsPacket.DecodedPacket, type: DnsType): string[] {
  const records: string[] = [];
  for (const answer of packet.answers ?? []) {
    if (answer.type !== type) continue;
    if (type === "TXT") {
      const data = (answer as { data: Buffer | string | (Buffer | string)[] }).data;
      records.push((Array.isArray(data) ? data : [data]).map((part) => (Buffer.isBuffer(part) ? part.toString("utf8") : part)).join(""));
    } else {
      records.push(String((answer as { data: string }).data));
    }
  }
  return records;
}
