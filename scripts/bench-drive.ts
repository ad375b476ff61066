/**
 * A closed-loop load of exactly `inFlight` requests at a time (the contention legs,
 * scripts/bench-contention.ts): each of `inFlight` workers sends its next request as soon as its
 * last is answered, over a keep-alive node:http agent. Unlike autocannon's synchronous
 * `setupRequest`, each request is made by an async `next` (a signed write signs its own, with a
 * fresh nonce, just before it is sent); latency is measured from the send, after the signing.
 */
import http from "node:http";

export interface DrivenRequest {
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface DriveOptions {
  base: string;
  inFlight: number;
  /** Seconds of load, or (the smoke run) a number of requests. */
  stop: { seconds: number } | { amount: number };
  /** The n-th request (n counts from 0 across the workers), or null when the leg has no more to send. */
  next: (n: number) => DrivenRequest | null | Promise<DrivenRequest | null>;
  /** Whether an answer is what the leg asked for (by default any 2xx); the rest are counted refused. */
  accepted?: (status: number, body: string) => boolean;
}

export interface DriveResult {
  answered: number;
  accepted: number;
  /** Answers that were not what the leg asked for (non-2xx, a filtered verdict, a parked write). */
  refused: number;
  serverErrors: number;
  transportErrors: number;
  seconds: number;
  /** Answers a second over the load's own elapsed time. */
  rate: number;
  p50: number;
  p99: number;
  statuses: Map<number, number>;
  /** True when `next` ran out before the time was up (the rate still holds, over less time). */
  ranOut: boolean;
}

const byDefault = (status: number) => status >= 200 && status < 300;

export async function drive(options: DriveOptions): Promise<DriveResult> {
  const url = new URL(options.base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.inFlight });
  const accepted = options.accepted ?? byDefault;
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  const counts = { accepted: 0, refused: 0, transportErrors: 0 };
  let issued = 0;
  let ranOut = false;
  const started = performance.now();
  const deadline = "seconds" in options.stop ? started + options.stop.seconds * 1000 : Infinity;
  const amount = "amount" in options.stop ? options.stop.amount : Infinity;

  const worker = async () => {
    while (performance.now() < deadline && issued < amount && !ranOut) {
      const request = await options.next(issued++);
      if (!request) {
        ranOut = true;
        return;
      }
      const sent = performance.now();
      try {
        const { status, body } = await send(agent, url, request);
        latencies.push(performance.now() - sent);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (accepted(status, body)) counts.accepted += 1;
        else counts.refused += 1;
      } catch {
        counts.transportErrors += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, worker));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  let serverErrors = counts.transportErrors;
  for (const [status, n] of statuses) if (status >= 500) serverErrors += n;
  return {
    answered: latencies.length,
    accepted: counts.accepted,
    refused: counts.refused,
    serverErrors,
    transportErrors: counts.transportErrors,
    seconds,
    rate: latencies.length / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    statuses,
    ranOut,
  };
}

/** The p-th quantile (0 to 1) of sorted values (nearest rank); 0 when there are none. */
export function nearestRank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1))]!;
}

/** The p-th quantile of sorted latencies (nearest rank), rounded to a millisecond; 0 when there are none. */
export function percentile(sorted: number[], p: number): number {
  return Math.round(nearestRank(sorted, p));
}

function send(agent: http.Agent, url: URL, request: DrivenRequest): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      { host: url.hostname, port: Number(url.port), method: request.method, path: request.path, headers: request.headers, agent },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        response.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    if (request.body !== undefined) outgoing.write(request.body);
    outgoing.end();
  });
}
