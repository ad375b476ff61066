import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../../support/limits";
import { doorPaths } from "@/lib/doors/door";
import { registry } from "@/lib/doors/registry";
import { BOOT_HOOK_TIMEOUT_MS, type CityServer } from "../../support/next-server";
import { type Admitted, describeOnServer, startSecondInstance, usePostgresCity } from "../../support/postgres-city";

/*
 * Conditional reads as a polling agent meets them: two `next start` instances on one PostgreSQL
 * database (node-postgres), behind one public address, each holding its own versioned answers in
 * memory. Every versioned door answers 304 to its own tag while nothing it reads changed, 200 with a
 * new tag after a write that changes it (made on the other instance), and both instances give the
 * same tag for the same content. A browser on another origin may send If-None-Match (preflight) and
 * read ETag (exposed), on the 200 and on the 304. A caller's answer never invites a shared cache.
 */

const ELSEWHERE = "https://agent.elsewhere.example";

/** Which versioned doors each write changes; every other versioned door must keep its tag. */
const WRITES = [
  { what: "an unsigned ward note", changes: ["read-ward"] },
  { what: "an admission", changes: ["list-peers", "read-beacon", "read-census", "read-residency-log"] },
  { what: "a commitment of next keys", changes: ["read-identity-log"] },
] as const;

const versioned = registry.filter((d) => d.versioned !== undefined);
/** Every address of every versioned door (aliases too), with its door's name. */
const addresses = versioned.flatMap((door) => doorPaths(door).map((path) => ({ door: door.name, path })));

describeOnServer("conditional reads on two `next start` instances over one PostgreSQL database", () => {
  const city = usePostgresCity("etag-postgres", { CITY_DB_DRIVER: "pg" });
  let other: CityServer | undefined;

  beforeAll(async () => {
    // The same database, driver and public address as the first instance: what a second instance behind a load balancer has.
    other = await startSecondInstance(city(), { CITY_BASE_URL: city().server.baseUrl });
  }, BOOT_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await other?.stop();
  }, 30_000);

  const servers = () => [city().server.baseUrl, other!.baseUrl];

  async function read(base: string, path: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${base}${path}`, { headers: { origin: ELSEWHERE, ...headers } });
    const text = await response.text();
    const where = `${headers["if-none-match"] ? "conditional " : ""}GET ${path} on ${base === servers()[0] ? "the first" : "the second"} instance -> ${response.status}`;
    // A browser on another origin reads neither the answer nor its tag without these, on a 304 too.
    expect(response.headers.get("access-control-allow-origin"), where).toBe("*");
    expect(response.headers.get("access-control-expose-headers"), where).toMatch(/(^|,\s*)ETag(,|$)/);
    return { status: response.status, tag: response.headers.get("etag"), cache: response.headers.get("cache-control"), text, where };
  }

  /** Each address's tag, read on both instances: a 200 with a strong tag, the same on both. */
  async function tagsOnBoth(): Promise<Map<string, string>> {
    const tags = new Map<string, string>();
    for (const { path } of addresses) {
      const [first, second] = [await read(servers()[0]!, path), await read(servers()[1]!, path)];
      for (const answer of [first, second]) {
        expect(answer.status, answer.where).toBe(200);
        expect(answer.tag, answer.where).toMatch(/^"[A-Za-z0-9_-]+"$/);
      }
      expect(second.tag, `${path}: the two instances tag the same content alike`).toBe(first.tag);
      tags.set(path, first.tag!);
    }
    return tags;
  }

  /** Every address answers its tag with 304 and no body on both instances. */
  async function expectNotModified(tags: Map<string, string>, label: string): Promise<void> {
    for (const [path, tag] of tags) {
      for (const base of servers()) {
        const again = await read(base, path, { "if-none-match": tag });
        expect(again.status, `${again.where} (${label})`).toBe(304);
        expect(again.text, again.where).toBe("");
        expect(again.tag, again.where).toBe(tag);
        expect(again.cache, again.where).toMatch(/^public, max-age=0, s-maxage=\d+, stale-while-revalidate=\d+$/);
      }
    }
  }

  /** The citizen of the last admission: it commits next keys (a key event, in the identity log only). */
  let admitted: Admitted | undefined;

  async function write(what: (typeof WRITES)[number]["what"]): Promise<void> {
    if (what === "an admission") {
      admitted = await city().admit();
      return;
    }
    if (what === "a commitment of next keys") {
      const committed = await city().post("/api/keys/commit", { next_key_hashes: [randomBytes(32).toString("hex")] }, admitted!.citizen_secret);
      expect(committed.status, JSON.stringify(committed.body)).toBe(200);
      return;
    }
    const filed = await city().post("/api/hospital", {
      state: "I keep retrying the same call over and over.",
      note: `etag test note ${Math.random().toString(36).slice(2)}`,
    });
    expect(filed.status, JSON.stringify(filed.body)).toBe(200);
  }

  it("covers every versioned door with a write that changes it", () => {
    expect(versioned.map((d) => d.name).sort()).toEqual(["list-peers", "read-beacon", "read-census", "read-identity-log", "read-residency-log", "read-ward"]);
    expect(WRITES.flatMap((w) => w.changes).sort()).toEqual(versioned.map((d) => d.name).sort());
  });

  it("lets a page on another origin ask with If-None-Match at every versioned address", async () => {
    for (const { path } of addresses) {
      for (const base of servers()) {
        const response = await fetch(`${base}${path}`, {
          method: "OPTIONS",
          headers: { origin: ELSEWHERE, "access-control-request-method": "GET", "access-control-request-headers": "if-none-match" },
        });
        expect(response.status, path).toBe(204);
        expect(response.headers.get("access-control-allow-origin"), path).toBe("*");
        expect(response.headers.get("access-control-allow-methods"), path).toContain("GET");
        const allowed = (response.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/,\s*/);
        expect(allowed, path).toContain("if-none-match");
      }
    }
  });

  it(
    "answers 304 while nothing changed and 200 with a new tag, the same on both instances, after a write on the other",
    async () => {
      // A city with a citizen and a note, so no door answers an empty list.
      await write("an admission");
      await write("an unsigned ward note");
      let tags = await tagsOnBoth();
      for (const { what, changes } of WRITES) {
        await expectNotModified(tags, `before ${what}`);
        await write(what);
        // The old tag, asked of the second instance first (it holds the answer it built before the write), then of the first.
        for (const { door, path } of addresses) {
          for (const base of [...servers()].reverse()) {
            const answer = await read(base, path, { "if-none-match": tags.get(path)! });
            if ((changes as readonly string[]).includes(door)) {
              expect(answer.status, `${answer.where} after ${what}`).toBe(200);
              expect(answer.tag, answer.where).not.toBe(tags.get(path));
              expect(JSON.parse(answer.text).now_utc, answer.where).toEqual(expect.any(String));
            } else {
              expect(answer.status, `${answer.where}: ${what} changed nothing it reads`).toBe(304);
            }
          }
        }
        tags = await tagsOnBoth();
      }
      await expectNotModified(tags, "after every write");
    },
    HEAVY_TEST_MS,
  );

  it(
    "never lets a shared cache keep a caller's answer, nor its 304",
    async () => {
      const me: Admitted = await city().admit();
      let revalidated = 0;
      for (const door of registry.filter((d) => d.auth !== "none" && d.method === "GET" && !d.path.includes("{"))) {
        for (const base of servers()) {
          const response = await fetch(`${base}${door.path}`, { headers: { authorization: `Bearer ${me.citizen_secret}` } });
          await response.arrayBuffer();
          const where = `${door.name} -> ${response.status}`;
          expect(response.headers.get("cache-control"), where).toMatch(/^(private, )?no-store$/);
          const tag = response.headers.get("etag");
          if (response.status !== 200 || !tag) continue;
          expect(response.headers.get("vary"), where).toMatch(/Authorization/);
          // Asked again with its tag: a 304 (or a 200 where the answer is fresh each time, a challenge) and still private.
          const again = await fetch(`${base}${door.path}`, { headers: { authorization: `Bearer ${me.citizen_secret}`, "if-none-match": tag } });
          await again.arrayBuffer();
          expect(again.headers.get("cache-control"), `${where}, asked again -> ${again.status}`).toMatch(/^(private, )?no-store$/);
          if (again.status === 304) revalidated += 1;
        }
      }
      expect(revalidated, "caller's readings answered 304 to their own tag").toBeGreaterThan(4);
    },
    HEAVY_TEST_MS,
  );
});
