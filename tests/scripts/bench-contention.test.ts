import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CitizenPool, contentionTables, type ContentionRow } from "@/scripts/bench-contention";
import { drive, percentile } from "@/scripts/bench-drive";
import { lockShareOf } from "@/scripts/bench-locks";

/*
 * The benchmark's contention legs (scripts/bench-contention.ts): the closed-loop driver keeps
 * exactly the asked number of requests in flight and counts what it was told to, the citizen pools
 * never hand a citizen more writes than its share, and the lock share is the mean of the samples'.
 * The sampler itself against PostgreSQL: tests/scripts/bench-lock-sampler.test.ts.
 */

describe("the contention driver (closed loop over node:http)", () => {
  let server: http.Server;
  let base = "";
  const seen = { now: 0, most: 0, total: 0 };
  // Answers are held until `batch` requests are waiting (or 1 s has passed since the first, so that
  // a driver with fewer in flight is seen, slowly, rather than hanging): then all are answered.
  let batch = 1;
  let held: (() => void)[] = [];
  let timer: NodeJS.Timeout | undefined;
  const release = () => {
    clearTimeout(timer);
    timer = undefined;
    const now = held;
    held = [];
    for (const answer of now) answer();
  };
  beforeAll(async () => {
    server = http.createServer((request, response) => {
      seen.now += 1;
      seen.total += 1;
      seen.most = Math.max(seen.most, seen.now);
      const status = Number(new URL(request.url!, "http://x").searchParams.get("status") ?? 200);
      held.push(() => {
        seen.now -= 1;
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify({ verdict: status === 200 ? "admitted" : "filtered" }));
      });
      if (held.length >= batch) release();
      else timer ??= setTimeout(release, 1000);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    batch = 1;
    Object.assign(seen, { now: 0, most: 0, total: 0 });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("keeps exactly `inFlight` requests in flight and sends `amount` of them", async () => {
    batch = 6;
    const result = await drive({ base, inFlight: 6, stop: { amount: 60 }, next: () => ({ method: "GET", path: "/", headers: {} }) });
    expect(seen.total).toBe(60);
    expect(seen.most).toBe(6);
    expect(result).toMatchObject({ answered: 60, accepted: 60, refused: 0, serverErrors: 0, ranOut: false });
    expect(result.p99).toBeGreaterThanOrEqual(result.p50);
  });

  it("counts what the leg did not ask for as refused, 5xx and lost connections as server errors", async () => {
    const statuses = [200, 429, 200, 503];
    const result = await drive({
      base,
      inFlight: 2,
      stop: { amount: 40 },
      next: (n) => ({ method: "POST", path: `/?status=${statuses[n % 4]}`, headers: { "content-type": "application/json" }, body: "{}" }),
      accepted: (status, body) => status === 200 && JSON.parse(body).verdict === "admitted",
    });
    expect(result).toMatchObject({ answered: 40, accepted: 20, refused: 20, serverErrors: 10 });
    expect(Object.fromEntries(result.statuses)).toEqual({ 200: 20, 429: 10, 503: 10 });
    const lost = await drive({ base: "http://127.0.0.1:1", inFlight: 2, stop: { amount: 4 }, next: () => ({ method: "GET", path: "/", headers: {} }) });
    expect(lost).toMatchObject({ answered: 0, transportErrors: 4, serverErrors: 4 });
  });

  it("stops when the leg has nothing more to send, and says so", async () => {
    const result = await drive({ base, inFlight: 4, stop: { seconds: 600 }, next: (n) => (n < 10 ? { method: "GET", path: "/", headers: {} } : null) });
    expect(seen.total).toBe(10);
    expect(result).toMatchObject({ answered: 10, ranOut: true });
  });

  it("reads the quantiles by nearest rank", () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(sorted, 0.5), percentile(sorted, 0.99), percentile([7], 0.99), percentile([], 0.5)]).toEqual([50, 99, 7, 0]);
  });
});

describe("the contention legs' citizen pools", () => {
  it("rotate over one group at a time, each citizen at most 25 writes (under the vault's 30 an hour), then stop", () => {
    const pool = new CitizenPool("t", false, 3);
    pool.citizens.push(...["a", "b", "c", "d", "e", "f"].map((did) => ({ did, secret: did })), { did: "g", secret: "g" });
    const writes = new Map<string, number>();
    const order: string[] = [];
    for (let citizen = pool.take(); citizen; citizen = pool.take()) {
      writes.set(citizen.did, (writes.get(citizen.did) ?? 0) + 1);
      order.push(citizen.did);
    }
    // Two whole groups of three: the seventh citizen waits for a group of its own.
    expect(Object.fromEntries(writes)).toEqual({ a: 25, b: 25, c: 25, d: 25, e: 25, f: 25 });
    expect(order.slice(0, 6)).toEqual(["a", "b", "c", "a", "b", "c"]);
    expect(order.slice(74, 78)).toEqual(["c", "d", "e", "f"]);
    expect(pool.reader(4).did).toBe("b");
  });
});

describe("the lock share", () => {
  it("is the mean over the samples with an active backend of waiting / active", () => {
    const share = lockShareOf([
      { active: 0, waiting: 0 },
      { active: 4, waiting: 3 },
      { active: 2, waiting: 0 },
      { active: 0, waiting: 0 },
    ]);
    expect(share).toEqual({ samples: 2, share: 0.375, meanActive: 1.5, waits: [] });
    expect(lockShareOf([{ active: 0, waiting: 0 }])).toEqual({ samples: 0, share: null, meanActive: 0, waits: [] });
  });

  it("names the three waits most seen, the most seen first", () => {
    const wait = (lock: string, waiting: string) => ({ lock, waiting, blocker: "idle in transaction: INSERT" });
    const { waits } = lockShareOf(
      [{ active: 2, waiting: 2 }],
      [
        wait("tuple", "a"),
        wait("transactionid", "b"),
        wait("transactionid", "b"),
        wait("advisory", "c"),
        wait("transactionid", "b"),
        wait("tuple", "a"),
        wait("relation", "d"),
      ],
    );
    expect(waits).toEqual([
      { ...wait("transactionid", "b"), seen: 3 },
      { ...wait("tuple", "a"), seen: 2 },
      { ...wait("advisory", "c"), seen: 1 },
    ]);
  });

  it("is compared leg by leg and load by load with the baseline's", () => {
    const result = {
      answered: 10,
      accepted: 10,
      refused: 0,
      serverErrors: 0,
      transportErrors: 0,
      seconds: 1,
      p50: 10,
      p99: 40,
      statuses: new Map(),
      ranOut: false,
    };
    const row = (rev: string, rate: number, share: number): ContentionRow => ({
      db: "pg",
      leg: "contention: GET /gate",
      rev,
      inFlight: 32,
      result: { ...result, rate },
      locks: { samples: 5, share, meanActive: 8, waits: [] },
      cpu: null,
    });
    const lines = contentionTables([row("", 300, 0.1), row("abc123", 100, 0.8)]);
    expect(lines.at(-1)).toBe("| pg | GET /gate | 32 | 3.00x | 1.00x | 1.00x | 80 % -> 10 % |");
  });
});
