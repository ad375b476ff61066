import http from "node:http";
import https from "node:https";
import ipaddr from "ipaddr.js";
import { env } from "@/lib/env";
import { type AddressVerdict, classifyAddress } from "./addresses";
import { DnsFailure, queryDns } from "./dns";
import type { OriginDomain } from "./domain";

/*
 * The city's fetch of `/.well-known/city-did` (CITY-ORIGIN/1) is a door from the city to the
 * network, so it is guarded: the name is resolved once, by the city's own DNS client (one A and one
 * AAAA query), every address it gave must be public unicast (never loopback, private, link-local,
 * CGNAT, multicast or the city's own), and the connection goes to that address itself (an IP
 * literal: no second lookup exists that a rebinding name could answer differently). No redirect is
 * followed, at most 4 KB is read, and the whole check (resolution included) ends after 5 s.
 */

export const WELL_KNOWN_PATH = "/.well-known/city-did";
export const FETCH_TIMEOUT_MS = 5000;
export const FETCH_MAX_BYTES = 4096;

export type FetchOutcome =
  | { kind: "answered"; url: string; address: string; status: number; contentType: string | null; bytes: number; body: string }
  | { kind: "refused"; url: string; address: string | null; reason: string };

export interface GuardOptions {
  /** CITY_ORIGIN_PROOF_INSECURE=1: loopback addresses allowed (local development and tests). */
  insecure: boolean;
  /** When the whole check must end (ms since the epoch). */
  deadline: number;
}

/** The city's own addresses and (on loopback, in development) its own port: never a target. */
function cityEndpoint(): { addresses: string[]; port: number; hostname: string } {
  const base = new URL(env().CITY_BASE_URL);
  const hostname = base.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const port = Number(base.port || (base.protocol === "https:" ? 443 : 80));
  return { addresses: [hostname], port, hostname };
}

/**
 * Resolves a name once (A and AAAA, one query each, side by side) and judges every address given:
 * the first allowed address of the preferred family, or the refusal of the first forbidden one.
 */
export async function resolveGuarded(
  host: string,
  options: GuardOptions,
): Promise<{ ok: true; address: AddressVerdict & { allowed: true } } | { ok: false; reason: string }> {
  const own = cityEndpoint();
  if (host === own.hostname) return { ok: false, reason: `${host} is the city's own name` };
  const [v4, v6] = await Promise.allSettled([queryDns(host, "A", options.deadline), queryDns(host, "AAAA", options.deadline)]);
  const addresses = [...(v4.status === "fulfilled" ? v4.value : []), ...(v6.status === "fulfilled" ? v6.value : [])];
  if (!addresses.length) {
    const failure = [v4, v6].find((r): r is PromiseRejectedResult => r.status === "rejected");
    const why = failure ? (failure.reason instanceof DnsFailure ? failure.reason.message : "the DNS query failed") : `${host} has no A or AAAA record`;
    return { ok: false, reason: why };
  }
  // A development city on loopback is told from other servers there by its port (fetchWellKnown).
  const ownAddresses = options.insecure && ipaddr.isValid(own.hostname) && ipaddr.parse(own.hostname).range() === "loopback" ? [] : own.addresses;
  const verdicts = addresses.map((a) => classifyAddress(a, { allowLoopback: options.insecure, ownAddresses }));
  // One forbidden address refuses the name: a name that also points inward is not checked at all.
  const forbidden = verdicts.find((v) => !v.allowed);
  if (forbidden && !forbidden.allowed)
    return { ok: false, reason: `${host} resolves to ${forbidden.address}: ${forbidden.reason}; the city connects to public unicast addresses only` };
  return { ok: true, address: verdicts[0] as AddressVerdict & { allowed: true } };
}

/** GETs `/.well-known/city-did` of a domain under every guard above; never throws. */
export async function fetchWellKnown(domain: OriginDomain, options: GuardOptions): Promise<FetchOutcome> {
  const url = `${domain.scheme}://${domain.domain}${WELL_KNOWN_PATH}`;
  const resolved = await resolveGuarded(domain.host, options);
  if (!resolved.ok) return { kind: "refused", url, address: null, reason: resolved.reason };
  const { address, family } = resolved.address;
  const own = cityEndpoint();
  if (options.insecure && domain.port === own.port && ipaddr.parse(address).range() === "loopback") {
    // A development city on loopback: its own port there is itself.
    return { kind: "refused", url, address, reason: `${domain.domain} resolves to ${address} port ${domain.port}: the city's own address` };
  }
  return request(url, domain, address, family, options.deadline);
}

function request(url: string, domain: OriginDomain, address: string, family: 4 | 6, deadline: number): Promise<FetchOutcome> {
  return new Promise<FetchOutcome>((resolve) => {
    let settled = false;
    const done = (outcome: FetchOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(outcome);
    };
    const refuse = (reason: string) => done({ kind: "refused", url, address, reason });
    const client = domain.scheme === "https" ? https : http;
    const req = client.request({
      // The address itself: Node makes no lookup for an IP literal, so nothing can answer differently now.
      host: address,
      family,
      port: domain.port,
      path: WELL_KNOWN_PATH,
      method: "GET",
      // The certificate must be the domain's (SNI and the identity check use servername).
      ...(domain.scheme === "https" ? { servername: domain.host } : {}),
      headers: { Host: domain.domain, Accept: "text/plain", "User-Agent": "CITY-ORIGIN/1 (origin proof check)" },
      agent: false,
    });
    const timer = setTimeout(() => refuse(`no complete answer within ${FETCH_TIMEOUT_MS / 1000} s`), Math.max(0, deadline - Date.now()));
    req.on("error", (error: NodeJS.ErrnoException) => refuse(connectionProblem(error)));
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      const contentType = typeof res.headers["content-type"] === "string" ? res.headers["content-type"].slice(0, 100) : null;
      if (status >= 300 && status < 400) {
        const location = typeof res.headers.location === "string" ? ` to ${res.headers.location.slice(0, 200)}` : "";
        return refuse(`answered ${status}, a redirect${location}; the city follows no redirect`);
      }
      const declared = Number(res.headers["content-length"]);
      if (Number.isFinite(declared) && declared > FETCH_MAX_BYTES) return refuse(`announced ${declared} bytes; the city reads at most ${FETCH_MAX_BYTES}`);
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > FETCH_MAX_BYTES) return refuse(`sent more than ${FETCH_MAX_BYTES} bytes; the city reads at most ${FETCH_MAX_BYTES}`);
        chunks.push(chunk);
      });
      res.on("end", () => done({ kind: "answered", url, address, status, contentType, bytes, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", () => refuse("the connection broke during the answer"));
    });
    req.end();
  });
}

/** What a failed connection says, without the city's own details. */
function connectionProblem(error: NodeJS.ErrnoException): string {
  if (error.code === "ECONNREFUSED") return "refused the connection";
  if (error.code === "ECONNRESET") return "reset the connection";
  if (error.code === "EHOSTUNREACH" || error.code === "ENETUNREACH") return "could not be reached";
  if (error.code?.startsWith("ERR_TLS") || /certificate|self[- ]signed|altnames/i.test(error.message))
    return `its TLS certificate is not valid for this name (${error.code ?? "certificate"})`;
  return "the connection failed";
}
