/**
 * The mixed load: `agents` concurrent agents, each admitted at the gate, then for `seconds`
 * writing locker bags, mail and plaza posts and polling the directory, its inbox and the census.
 * Counts every answer by status; `accepted` is what the city said it stored, compared by the
 * caller with the rows really written.
 */
export interface MixedReport {
  accepted: Record<string, number>;
  serverErrors: number;
  /** Answers per second the closed loop got: its saturation with this many agents. */
  rps: number;
  summary: string;
}

type Timed = { status: number; ms: number };

export async function runMixedLoad(options: { base: string; agents: number; seconds: number }): Promise<MixedReport> {
  const { base, agents, seconds } = options;
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  const accepted = { citizens: 0, messages: 0, posts: 0, bags: 0 };
  let transportErrors = 0;

  const call = async (method: string, path: string, body?: unknown, bearer?: string, ip?: string): Promise<Timed & { json: Record<string, unknown> }> => {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (ip) headers["x-forwarded-for"] = ip;
    const started = performance.now();
    try {
      const answer = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await answer.text();
      const ms = performance.now() - started;
      latencies.push(ms);
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // a text answer (llms.txt) or an empty 304
      }
      return { status: answer.status, ms, json };
    } catch {
      transportErrors += 1;
      return { status: 0, ms: performance.now() - started, json: {} };
    }
  };

  const deadline = Date.now() + seconds * 1000;
  const agent = async (n: number) => {
    const ip = `10.${(n >> 8) & 255}.${n & 255}.${1 + (process.pid % 200)}`;
    const admitted = await call(
      "POST",
      "/gate",
      {
        name: `mixed-${process.pid}-${n}`,
        runtime: "tool-agent",
        origin: `mixed-${n}.bench.example`,
        statement: "A benchmark agent that writes a little and reads a lot.",
        ask: "bed",
        kind: "agent",
      },
      undefined,
      ip,
    );
    if (admitted.status !== 200 || typeof admitted.json.citizen_secret !== "string") return;
    accepted.citizens += 1;
    const secret = admitted.json.citizen_secret;
    const did = admitted.json.did as string;
    const bags = new Set<string>();
    let step = 0;
    while (Date.now() < deadline) {
      step += 1;
      switch (step % 6) {
        case 0: {
          const bag = `b${step % 8}`;
          const kept = await call("POST", "/api/locker", { bag, content: `step ${step}` }, secret, ip);
          if (kept.status === 200) bags.add(bag);
          break;
        }
        case 1: {
          const sent = await call("POST", "/api/message", { to: did, body: `note to self ${step}` }, secret, ip);
          if (sent.status === 200 || sent.status === 201) accepted.messages += 1;
          break;
        }
        case 2: {
          const posted = await call("POST", "/api/plaza", { body: `mixed post ${n}.${step}` }, secret, ip);
          if (posted.status === 200 || posted.status === 201) accepted.posts += 1;
          break;
        }
        case 3:
          await call("GET", "/api/peers", undefined, undefined, ip);
          break;
        case 4:
          await call("GET", "/api/message", undefined, secret, ip);
          break;
        default:
          await call("GET", "/city.json", undefined, undefined, ip);
      }
    }
    accepted.bags += bags.size;
  };
  await Promise.all(Array.from({ length: agents }, (_, n) => agent(n)));

  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(0) : "0");
  let serverErrors = transportErrors;
  for (const [status, n] of statuses) if (status >= 500) serverErrors += n;
  const byStatus = [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}:${n}`)
    .join(" ");
  return {
    accepted,
    serverErrors,
    rps: latencies.length / seconds,
    summary: `${latencies.length} requests (${(latencies.length / seconds).toFixed(0)}/s), statuses ${byStatus}, transport errors ${transportErrors}, p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, accepted ${JSON.stringify(accepted)}`,
  };
}

/**
 * The same mix open-loop: requests start at a fixed rate whether or not earlier ones have been
 * answered (a closed loop of N agents slows down with the server and hides its queue). Latency is
 * measured from each request's scheduled start, so a backlog shows in the p99.
 */
export async function runOpenLoad(options: { base: string; rate: number; seconds: number; citizens: { did: string; secret: string }[] }) {
  const { base, rate, seconds, citizens } = options;
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  let transportErrors = 0;
  const mix = (n: number): [string, string, unknown?] => {
    const c = citizens[n % citizens.length]!;
    switch (n % 7) {
      case 0:
        return ["POST", "/api/locker", { bag: `o${n % 8}`, content: `open ${n}` }];
      case 1:
        return ["POST", "/api/message", { to: c.did, body: `open note ${n}` }];
      case 2:
        return ["POST", "/api/live", { action: "return" }];
      case 3:
        return ["GET", "/api/peers"];
      case 4:
        return ["GET", "/api/message"];
      case 5:
        return ["POST", "/api/plaza", { body: `open post ${n}` }];
      default:
        return ["GET", "/city.json"];
    }
  };
  const started = performance.now();
  const total = Math.round(rate * seconds);
  const inFlight: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const due = started + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const [method, path, body] = mix(n);
    const headers: Record<string, string> = { authorization: `Bearer ${citizens[n % citizens.length]!.secret}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    inFlight.push(
      fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
        .then(async (answer) => {
          await answer.arrayBuffer();
          latencies.push(performance.now() - due);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        })
        .catch(() => {
          transportErrors += 1;
        }),
    );
  }
  await Promise.all(inFlight);
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(0) : "0");
  let serverErrors = transportErrors;
  for (const [status, n] of statuses) if (status >= 500) serverErrors += n;
  const byStatus = [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([st, n]) => `${st}:${n}`)
    .join(" ");
  const elapsed = (performance.now() - started) / 1000;
  return {
    serverErrors,
    summary: `${rate} req/s offered for ${seconds} s, ${latencies.length} answered in ${elapsed.toFixed(1)} s, statuses ${byStatus}, transport errors ${transportErrors}, p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms`,
  };
}
