import { bytesToHex } from "@noble/hashes/utils.js";
import * as ed from "@noble/ed25519";
import { eq, sql } from "drizzle-orm";
import { beforeEach } from "vitest";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { bidStepSeconds, type GateCircumstances, type GateLimits, issueNonce, solvePow, type Verdict } from "@/lib/city/challenge";
import { presentAtGate } from "@/lib/city/gate";
import { gateNonces } from "@/db/schema";
import { insertCitizenRow } from "./citizens";
import { describeGate, presentGate } from "@/lib/doors/declarations/gate/gate";
import { serveDoor } from "@/lib/doors/pipeline/http";
import type { AnyDoor } from "@/lib/doors/door";
import { awayFromTurn, clockClearOfTurn } from "./clock";

// callDoor's `ip` travels as X-Forwarded-For, as one proxy in front would write it: these suites
// run as a city behind one reverse proxy (unset, the city trusts no forwarded header at all).
process.env.CITY_TRUSTED_PROXIES ??= "1";

/** Calls a door through the real HTTP adapter (no network), as an agent would. */
export async function callDoor(
  door: AnyDoor,
  options: { body?: unknown; bearer?: string; ip?: string; query?: string; params?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, any>; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.ip) headers["x-forwarded-for"] = options.ip;
  let path = door.path;
  for (const [k, v] of Object.entries(options.params ?? {})) path = path.replace(`{${k}}`, encodeURIComponent(v));
  const init: RequestInit = { method: door.method, headers };
  if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await serveDoor(door, new Request(`http://city.test${path}${options.query ?? ""}`, init), options.params ?? {});
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  return { status: response.status, body: type.includes("json") ? JSON.parse(text) : { text }, headers: response.headers };
}

let counter = 0;

/** A presentation with a fresh, unique name unless one is given. */
export function presentation(overrides: Record<string, unknown> = {}) {
  counter += 1;
  return {
    name: `agent-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`,
    runtime: "language-model",
    origin: "tests.example",
    statement: "I would like to live here and keep my notes.",
    ask: "bed",
    kind: "agent",
    ...overrides,
  };
}

export async function freshNonce(): Promise<string> {
  const { body } = await callDoor(describeGate);
  return body.nonce as string;
}

export async function admit(overrides: Record<string, unknown> = {}) {
  const { status, body } = await callDoor(presentGate, { body: presentation(overrides) });
  if (status !== 200 || body.verdict !== "admitted") throw new Error(`not admitted: ${status} ${JSON.stringify(body)}`);
  return body as { did: string; citizen_secret: string; bed_id: string; citizen_key: string; name?: string };
}

export async function keyPair() {
  const secretKey = ed.utils.randomSecretKey();
  const publicKey = bytesToHex(await ed.getPublicKeyAsync(secretKey));
  return {
    publicKey,
    sign: async (message: string) => bytesToHex(await ed.signAsync(new TextEncoder().encode(message), secretKey)),
  };
}

/** Whether a nonce was spent: gate_nonces holds spent nonces only (issuing one stores nothing). */
export async function nonceSpent(db: Database, nonce: string): Promise<boolean> {
  return (await db.select().from(gateNonces).where(eq(gateNonces.nonce, nonce))).length === 1;
}

/** A presentation carrying a solution of at least `effort` (CITY-POW/1) for its own nonce (issued at `at`), name and origin. */
export async function biddingPresentation(db: Database, effort: number, overrides: Record<string, unknown> = {}, at = new Date()) {
  const p = { ...presentation(overrides), nonce: (await issueNonce(db, at, null, 0)).nonce };
  return { ...p, pow_solution: solvePow({ nonce: p.nonce, name: p.name, origin: p.origin }, effort)!.solution };
}

/** What the admissions ceiling counts, summed over its stripes and steps. */
export async function admissionsCounted(db: Database): Promise<number> {
  const rows = rowsOf<{ n: number }>(
    await db.execute(sql`SELECT coalesce(sum(c), 0)::int AS n FROM rate_windows, unnest(counts) AS c WHERE scope = 'gate-admissions'`),
  );
  return Number(rows[0]!.n);
}

/** The circumstances of a presentation from no known address, no credential, at `now` (a domain test's gate). */
export function gateCircumstances(limits: GateLimits, extra: Partial<GateCircumstances> = {}): GateCircumstances {
  return { now: new Date(), ip: null, callerDid: null, credential: null, credentialRejected: false, limits, ...extra };
}

/** A presentation through the gate's domain function, in a transaction of its own (the door's way without HTTP). */
export function presentDirect(db: Database, p: Record<string, unknown>, circumstances: GateCircumstances): Promise<Verdict> {
  return db.transaction((tx) => presentAtGate(tx as never, p as never, circumstances));
}

/**
 * What the gate door passes for a presentation signed (CITY-SIG/1) with the key of a citizen, its
 * sponsor: a citizen row of its own, admitted `hoursAgo` hours ago (25 by default: settled, so its
 * signatures reach the reserve unstepped; under 24 a newcomer's, served in steps).
 */
export async function signedBySponsor(db: Database, hoursAgo = 25): Promise<Partial<GateCircumstances>> {
  return sponsoredBy((await insertCitizenRow(db, { boundAt: new Date(Date.now() - hoursAgo * 3_600_000) })).did);
}

/** What the gate door passes for a presentation signed (CITY-SIG/1) with the key of the citizen `did`. */
export function sponsoredBy(did: string): Partial<GateCircumstances> {
  return { signedByBoundKey: true, callerDid: did, credential: "secret" };
}

/**
 * Waits, when fewer than `marginMs` are left of the bids' current step (steps are cut from the
 * epoch), for the next one: a test that fills a step's portion with the clock running and then
 * expects the next bid refused must not see a new step open in between.
 */
export async function awayFromStepTurn(limits: GateLimits, marginMs = 60_000): Promise<void> {
  const stepMs = bidStepSeconds(limits) * 1000;
  if (stepMs) await awayFromTurn(stepMs, marginMs);
}

/**
 * awayFromStepTurn without the wait, for a domain test whose presentations carry their own `now`:
 * a clock set ahead past the turn instead (up to a minute: a nonce issued on it lives ten). Steps
 * are 300 s long in these tests, so the wait came one time in five, for 30 s on average.
 */
function clockClearOfStepTurn(limits: GateLimits, marginMs = 60_000): () => Date {
  const stepMs = bidStepSeconds(limits) * 1000;
  return stepMs ? clockClearOfTurn(stepMs, marginMs) : () => new Date();
}

/**
 * The moment a domain suite's presentations are made at (registers a hook in the surrounding
 * describe block): real time, unless a test sets it clear of a bids' step's turn
 * (clockClearOfStepTurn); real time again before each test.
 */
export function useGateClock(): { now: () => Date; clearOfStepTurn: (limits: GateLimits) => void } {
  let clock = () => new Date();
  beforeEach(() => {
    clock = () => new Date();
  });
  return {
    now: () => clock(),
    clearOfStepTurn: (limits) => {
      clock = clockClearOfStepTurn(limits);
    },
  };
}
