import { afterAll, beforeAll, expect, it } from "vitest";
import { noteVerifies } from "@/lib/city/logs/residency-log";
import { presentation } from "../../../support/gate";
import { BOOT_HOOK_TIMEOUT_MS, type CityServer } from "../../../support/next-server";
import { type Answer, describeOnServer, startSecondInstance, usePostgresCity } from "../../../support/postgres-city";

/*
 * Issue 29, item 9, as found: two `next start` instances on one PostgreSQL database (node-postgres),
 * each with its own CITY_BASE_URL (its own address), so each configured with its own log origin.
 * The log's origin and key are the database's: the first instance records them; the second says
 * so at start, refuses every append with a 503 problem (log_identity_mismatch) while the first
 * appends, publishes the database's identity on its card, and every checkpoint either instance
 * serves, and every checkpoint the database holds, verifies against that card.
 */

const ADMISSIONS_EACH = 12;

describeOnServer("two instances with different CITY_BASE_URL on one PostgreSQL database keep one log identity", () => {
  const city = usePostgresCity("log-identity", { CITY_DB_DRIVER: "pg" });
  let other: CityServer | undefined;
  let firstCitizen: { did: string; citizen_secret: string } | undefined;

  beforeAll(async () => {
    // The first instance's first append records the identity (if its start has not already).
    firstCitizen = await city().admit();
    other = await startSecondInstance(city());
  }, BOOT_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await other?.stop();
  }, 30_000);

  const call = async (base: string, path: string, init: RequestInit = {}): Promise<Answer> => {
    const response = await fetch(`${base}${path}`, init);
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    return { status: response.status, type, headers: response.headers, body: text && type.includes("json") ? JSON.parse(text) : { text } };
  };
  const present = (base: string) =>
    call(base, "/gate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(presentation()) });
  const cardLog = async (base: string) => {
    const card = await call(base, "/city-card.json");
    expect(card.status).toBe(200);
    const log = card.body.log as { origin: string; verifier_key: string };
    return { origin: log.origin, vkey: log.verifier_key };
  };
  /** Every note the database holds, read directly (hex, so psql's lines stay one a row). */
  const heldNotes = async () =>
    (await city().psql("SELECT encode(convert_to(note, 'UTF8'), 'hex') FROM log_checkpoints ORDER BY size"))
      .split("\n")
      .filter(Boolean)
      .map((hex) => Buffer.from(hex, "hex").toString("utf8"));

  it("the second instance says so at start, refuses every append with 503 log_identity_mismatch, and every checkpoint served or held verifies against both cards", async () => {
    const first = city().server.baseUrl;
    const second = other!.baseUrl;
    expect(new URL(first).host).not.toBe(new URL(second).host);
    const recorded = (await city().psql("SELECT origin || ' ' || vkey FROM log_identity")).split(" ");
    expect(recorded[0]).toBe(`${new URL(first).host}/residency-log`);

    // At start: the first instance names its identity, the second says loudly that it is not the log's.
    for (let i = 0; i < 300 && !other!.output().includes("LOG IDENTITY MISMATCH"); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(other!.output()).toContain("LOG IDENTITY MISMATCH");
    expect(other!.output()).toContain(`${new URL(second).host}/residency-log`);
    expect(city().server.output()).toMatch(/"msg":"log identity"/);

    // Both cards publish the database's identity.
    const [firstLog, secondLog] = [await cardLog(first), await cardLog(second)];
    expect(firstLog).toEqual({ origin: recorded[0], vkey: recorded[1] });
    expect(secondLog).toEqual(firstLog);

    const logBefore = await city().count("residency_log");
    // Admissions at both at once, with checkpoint reads at both among them.
    const sent = await Promise.all(
      Array.from({ length: ADMISSIONS_EACH * 3 }, (_, i) => {
        const base = i % 2 === 0 ? first : second;
        return i % 3 === 2
          ? call(base, "/api/residency/log/checkpoint").then((a) => ({ kind: "checkpoint" as const, base, a }))
          : present(base).then((a) => ({ kind: "gate" as const, base, a }));
      }),
    );
    city().figures.parallel_requests_postgres += sent.length;
    const admissions = sent.filter((s) => s.kind === "gate");
    const atFirst = admissions.filter((s) => s.base === first);
    const atSecond = admissions.filter((s) => s.base === second);
    for (const { a } of atFirst) {
      expect(a.status, JSON.stringify(a.body).slice(0, 300)).toBe(200);
      expect(a.body.verdict).toBe("admitted");
      expect(noteVerifies(a.body.log_receipt.checkpoint as string, firstLog), "the receipt's checkpoint verifies against the card").toBe(true);
    }
    expect(atSecond.length).toBeGreaterThan(0);
    for (const { a } of atSecond) {
      expect(a.status, JSON.stringify(a.body).slice(0, 300)).toBe(503);
      expect(a.type).toMatch(/^application\/problem\+json/);
      expect(a.body.code).toBe("log_identity_mismatch");
      expect(a.body.detail).toContain(`${new URL(second).host}/residency-log`);
    }
    // Nothing the second instance was asked to append is in the log: only the first's admissions.
    expect(await city().count("residency_log")).toBe(logBefore + atFirst.length);

    // Every checkpoint served during the race and after it, by either instance, verifies against both cards.
    const served = [
      ...sent.filter((s) => s.kind === "checkpoint").map((s) => s.a),
      await call(first, "/api/residency/log/checkpoint"),
      await call(second, "/api/residency/log/checkpoint"),
    ];
    for (const answer of served) {
      expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
      expect(noteVerifies(answer.body.text as string, firstLog), answer.body.text as string).toBe(true);
    }
    // And every checkpoint the database holds: one tree, one origin, one key.
    // (One per batch since the logs integrate in batches, issue 42: the first citizen's, and at least
    // one of the race's admissions, at most one per admission.)
    const notes = await heldNotes();
    expect(notes.length).toBeGreaterThanOrEqual(2);
    expect(notes.length).toBeLessThanOrEqual(1 + atFirst.length);
    for (const note of notes) expect(noteVerifies(note, firstLog), note).toBe(true);

    // The second instance still serves what does not append: a citizen's locker write.
    const bag = await call(second, "/api/locker", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${firstCitizen!.citizen_secret}` },
      body: JSON.stringify({ bag: "notes", content: "kept through the second instance" }),
    });
    expect(bag.status, JSON.stringify(bag.body).slice(0, 300)).toBeLessThan(300);
  }, 120_000);
});
