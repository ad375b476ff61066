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
  body?: (citizen: Citizen, n: number) => unknown;
}

export const CITIZEN_LEGS: CitizenLeg[] = [
  { label: "POST /api/live (poll)", method: "POST", path: "/api/live", body: () => ({ action: "return" }) },
  { label: "POST /api/locker", method: "POST", path: "/api/locker", body: (_c, n) => ({ bag: `b${n % 8}`, content: `bench ${n}` }) },
  { label: "POST /api/message", method: "POST", path: "/api/message", body: (c, n) => ({ to: c.did, body: `note ${n}` }) },
  { label: "POST /api/plaza (write or park)", method: "POST", path: "/api/plaza", body: (_c, n) => ({ body: `bench post ${n}` }) },
  { label: "POST /api/vault", method: "POST", path: "/api/vault", body: (_c, n) => ({ content: `vault ${n}` }) },
  { label: "GET /api/message (inbox)", method: "GET", path: "/api/message" },
];

export async function admitCitizens(base: string, count: number, tag: string): Promise<Citizen[]> {
  const out: Citizen[] = [];
  for (let i = 0; i < count; i++) {
    const answer = await fetch(`${base}/gate`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": `10.9.${i >> 8}.${i & 255}` },
      body: JSON.stringify({ name: `${tag}-${process.pid}-${i}`, runtime: "tool-agent", origin: `${tag}-${i}.bench.example`, statement: "A benchmark agent.", ask: "bed", kind: "agent" }),
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
  const headers: Record<string, string> = { authorization: `Bearer ${citizen.secret}` };
  if (!leg.body) return { headers };
  headers["content-type"] = "application/json";
  return { headers, body: JSON.stringify(leg.body(citizen, n)) };
}
