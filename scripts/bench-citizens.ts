/**
 * Benchmark legs that need citizens: `citizens` are admitted at the gate first (the bench turns
 * the gate's ceilings off), then each leg's requests rotate over their secrets so no two
 * connections wait on one citizen's row. `CITIZEN_LEGS` are the poll and the citizen writes.
 */
export interface Citizen {
  did: string;
  secret: string;
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

export async function admitCitizens(base: string, count: number, tag: string): Promise<Citizen[]> {
  const out: Citizen[] = [];
  for (let i = 0; i < count; i++) {
    const answer = await fetch(`${base}/gate`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": `10.9.${i >> 8}.${i & 255}` },
      body: JSON.stringify({
        name: `${tag}-${process.pid}-${i}`,
        runtime: "tool-agent",
        origin: `${tag}-${i}.bench.example`,
        statement: "A benchmark agent.",
        ask: "bed",
        kind: "agent",
      }),
    });
    const json = (await answer.json()) as { did?: string; citizen_secret?: string };
    if (!answer.ok || !json.citizen_secret || !json.did) throw new Error(`admitting a bench citizen answered ${answer.status}`);
    out.push({ did: json.did, secret: json.citizen_secret });
  }
  return out;
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
