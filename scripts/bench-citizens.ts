import { importSeed } from "@/lib/sign-request";

/**
 * Benchmark legs that need citizens: `citizens` are admitted at the gate first (the bench turns
 * the gate's ceilings off), then each leg's requests rotate over their secrets so no two
 * connections wait on one citizen's row. `CITIZEN_LEGS` are the poll and the citizen writes.
 */
export interface Citizen {
  did: string;
  secret: string;
  /** The controller key's 32 seed bytes, for a citizen admitted with one (`keyed`): it signs requests (CITY-SIG/1). */
  seed?: Uint8Array;
}

export interface AdmitOptions {
  /** Bind a fresh Ed25519 controller key at admission (a gate nonce, signed): the citizen can sign requests. */
  keyed?: boolean;
  /** The i-th admission's client address (X-Forwarded-For; the servers trust one proxy). */
  address?: (i: number) => string;
}

export interface CitizenLeg {
  label: string;
  method: "GET" | "POST";
  path: string;
  /** The n-th request's body, for the n-th citizen in rotation (`round`: how many times the rotation came round). */
  body?: (citizen: Citizen, n: number, round: number) => unknown;
  /** Sent without the citizen's Bearer (a newcomer at the gate). */
  anonymous?: boolean;
}

export const CITIZEN_LEGS: CitizenLeg[] = [
  { label: "POST /api/live (poll)", method: "POST", path: "/api/live", body: () => ({ action: "return" }) },
  { label: "POST /api/locker", method: "POST", path: "/api/locker", body: (_c, n) => ({ bag: `b${n % 8}`, content: `bench ${n}` }) },
  { label: "POST /api/message", method: "POST", path: "/api/message", body: (c, n) => ({ to: c.did, body: `note ${n}` }) },
  { label: "POST /api/plaza (write or park)", method: "POST", path: "/api/plaza", body: (_c, n) => ({ body: `bench post ${n}` }) },
  { label: "POST /api/vault", method: "POST", path: "/api/vault", body: (_c, n) => ({ content: `vault ${n}` }) },
  { label: "GET /api/message (inbox)", method: "GET", path: "/api/message" },
  // The two that append to the residency log, last: they add citizens and move them out and back.
  {
    label: "POST /gate (admit)",
    method: "POST",
    path: "/gate",
    anonymous: true,
    body: (_c, n) => ({
      name: `admit-${process.pid}-${n}`,
      runtime: "tool-agent",
      origin: `admit-${process.pid}-${n}.bench.example`,
      statement: "A benchmark agent.",
      ask: "bed",
      kind: "agent",
    }),
  },
  // Each citizen leaves on one round of the rotation and comes back on the next.
  { label: "POST /api/live (leave, come back)", method: "POST", path: "/api/live", body: (_c, _n, round) => ({ action: round % 2 ? "return" : "leave" }) },
];

export async function admitCitizens(base: string, count: number, tag: string, options: AdmitOptions = {}): Promise<Citizen[]> {
  // Consecutive citizens from distinct /24s (the gate's network share is 120 presentations a /24 an hour).
  const address = options.address ?? ((i: number) => `10.9.${i & 255}.${(i >> 8) & 255}`);
  const out: Citizen[] = [];
  for (let i = 0; i < count; i++) {
    const from = { "x-forwarded-for": address(i) };
    const key = options.keyed ? await keyAtGate(base, from) : null;
    const answer = await fetch(`${base}/gate`, {
      method: "POST",
      headers: { "content-type": "application/json", ...from },
      body: JSON.stringify({
        name: `${tag}-${process.pid}-${i}`,
        runtime: "tool-agent",
        origin: `${tag}-${i}.bench.example`,
        statement: "A benchmark agent.",
        ask: "bed",
        kind: "agent",
        ...(key ? { nonce: key.nonce, controller_public_key: key.publicKey, controller_signature: key.signature } : {}),
      }),
    });
    const json = (await answer.json()) as { did?: string; citizen_secret?: string };
    if (!answer.ok || !json.citizen_secret || !json.did)
      throw new Error(`admitting a bench citizen answered ${answer.status}: ${JSON.stringify(json).slice(0, 300)}`);
    out.push({ did: json.did, secret: json.citizen_secret, ...(key ? { seed: key.seed } : {}) });
  }
  return out;
}

/** A fresh controller key and its signature over a gate nonce (GET /gate), as an agent binds one at admission. */
async function keyAtGate(base: string, headers: Record<string, string>) {
  const described = await fetch(`${base}/gate`, { headers });
  const { nonce } = (await described.json()) as { nonce?: string };
  if (!described.ok || !nonce) throw new Error(`a gate nonce for a keyed bench citizen answered ${described.status}`);
  const seed = crypto.getRandomValues(new Uint8Array(32));
  const { privateKey, publicKey } = await importSeed(seed);
  const signature = new Uint8Array(await crypto.subtle.sign("Ed25519", privateKey, new TextEncoder().encode(nonce)));
  return { seed, nonce, publicKey: Buffer.from(publicKey).toString("hex"), signature: Buffer.from(signature).toString("hex") };
}

/** Headers and body of the n-th request of a leg, for the n-th citizen in rotation. */
export function legRequest(leg: CitizenLeg, citizens: Citizen[], n: number): { headers: Record<string, string>; body?: string } {
  const citizen = citizens[n % citizens.length]!;
  const headers: Record<string, string> = leg.anonymous ? {} : { authorization: `Bearer ${citizen.secret}` };
  if (!leg.body) return { headers };
  headers["content-type"] = "application/json";
  return { headers, body: JSON.stringify(leg.body(citizen, n, Math.floor(n / citizens.length))) };
}

/** Brings every citizen back (bound, with a bed) after a leg that moved them out. */
export async function bringBack(base: string, citizens: Citizen[]): Promise<void> {
  for (const citizen of citizens) {
    const answer = await fetch(`${base}/api/return`, {
      method: "POST",
      headers: { authorization: `Bearer ${citizen.secret}`, "content-type": "application/json" },
      body: "{}",
    });
    if (!answer.ok) throw new Error(`bringing a bench citizen back answered ${answer.status}`);
    await answer.arrayBuffer();
  }
}
