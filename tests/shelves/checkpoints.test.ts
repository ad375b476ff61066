import { createHash, generateKeyPairSync, randomBytes } from "node:crypto";
import { asc, count, eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { checkpoints, citizens, contentRefusals } from "@/db/schema";
import { latestCheckpoint } from "@/lib/city/shelves/checkpoints";
import { CHECKPOINT_LIMITS, keepCheckpoint, readCheckpoints } from "@/lib/doors/declarations/shelves/checkpoints";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { describeOnDatabases, type TestDatabase } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { causes, expectAppendOnly, expectProblem } from "../support/assertions";

// The spec's numbers (Limits table), not the code's constants.
const C = { versions: 12, bytesPerVersion: 32_768 } as const;

// These suites admit many citizens through the real gate; the gate's flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const pemPrivateKey = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const citySecretLike = () => `city_sk_${randomBytes(36).toString("hex")}`;

describeOnDatabases(
  "checkpoints",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    const write = (secret: string | undefined, body: unknown) => callDoor(keepCheckpoint, { bearer: secret, body });
    const read = (secret: string | undefined, query = "") => callDoor(readCheckpoints, { bearer: secret, query });
    const versionsOf = async (did: string) => (await t().db.select({ n: count() }).from(checkpoints).where(eq(checkpoints.did, did)))[0]!.n;

    describe("happy path", () => {
      it("appends versions with the sha256 of their UTF-8 bytes and answers { now_utc, version, sha256, bytes, created_at }", async () => {
        const a = await admit();
        const first = await write(a.citizen_secret, { content: "state: reading the plat", label: "morning" });
        expect(first.status).toBe(200);
        expect(Object.keys(first.body)).toEqual(["now_utc", "version", "sha256", "bytes", "created_at"]);
        expect(first.body).toMatchObject({ version: 1, sha256: sha256("state: reading the plat"), bytes: 23, created_at: first.body.now_utc });
        const unicode = "résumé 🧭 — 続き";
        const second = await write(a.citizen_secret, { content: unicode });
        expect(second.body).toMatchObject({ version: 2, sha256: sha256(unicode), bytes: Buffer.byteLength(unicode, "utf8") });
        expect(second.headers.get("cache-control")).toBe("private, no-store");
        const rows = await t().db.select().from(checkpoints).where(eq(checkpoints.did, a.did)).orderBy(asc(checkpoints.version));
        expect(rows.map((r) => [r.version, r.content, r.label, r.sha256])).toEqual([
          [1, "state: reading the plat", "morning", first.body.sha256],
          [2, unicode, null, second.body.sha256],
        ]);
      });

      it("lists metadata without contents, oldest first, with the limits, and reads one version or the latest with its content", async () => {
        const a = await admit();
        const empty = await read(a.citizen_secret);
        expect(empty.status).toBe(200);
        expect(Object.keys(empty.body)).toEqual(["now_utc", "checkpoints", "limits"]);
        expect(empty.body).toMatchObject({ checkpoints: [], limits: CHECKPOINT_LIMITS });
        expect(CHECKPOINT_LIMITS).toEqual([
          { name: "versions", limit: C.versions, per: "citizen", over: "refused" },
          { name: "version_bytes", limit: C.bytesPerVersion, per: "version", over: "refused" },
        ]);
        const written = [];
        for (const [i, label] of ["one", undefined, "three"].entries()) {
          written.push((await write(a.citizen_secret, { content: `body ${i + 1}`, ...(label ? { label } : {}) })).body);
        }
        const listed = await read(a.citizen_secret);
        expect(listed.body.checkpoints).toEqual(
          written.map((w, i) => ({ version: i + 1, sha256: w.sha256, bytes: w.bytes, label: ["one", null, "three"][i], created_at: w.created_at })),
        );
        expect(JSON.stringify(listed.body)).not.toContain("body 2");

        const second = await read(a.citizen_secret, "?version=2");
        expect(second.status).toBe(200);
        expect(Object.keys(second.body)).toEqual(["now_utc", "version", "sha256", "bytes", "label", "created_at", "content"]);
        expect(second.body).toMatchObject({ version: 2, content: "body 2", label: null, sha256: sha256("body 2") });
        const latest = await read(a.citizen_secret, "?version=latest");
        expect(latest.body).toMatchObject({ version: 3, content: "body 3", label: "three", sha256: written[2]!.sha256 });
      });

      it("answers a version that does not exist, or latest on an empty shelf, with a 404 problem", async () => {
        const a = await admit();
        expectProblem(await read(a.citizen_secret, "?version=latest"), 404, "not_found");
        await write(a.citizen_secret, { content: "only one" });
        expectProblem(await read(a.citizen_secret, "?version=2"), 404, "not_found");
        expectProblem(await read(a.citizen_secret, `?version=${C.versions}`), 404, "not_found");
      });
    });

    describe("bad input", () => {
      it("answers every malformed write with a 400 problem and stores nothing", async () => {
        const a = await admit();
        const bodies: unknown[] = [
          {},
          { label: "no content" },
          { content: 42 },
          { content: null },
          { content: ["a"] },
          { content: "fine", label: "" },
          { content: "fine", label: "l".repeat(201) },
          { content: "fine", label: 7 },
          { content: "fine", extra: true },
          { content: "nul \u0000 inside" },
          { content: "lone \uDC00 surrogate" },
          { content: "fine", label: "nul \u0000" },
          "a string",
        ];
        for (const body of bodies) expectProblem(await write(a.citizen_secret, body), 400, "bad_request");
        const malformed = await serveDoor(
          keepCheckpoint,
          new Request("http://city.test/api/checkpoint", {
            method: "POST",
            headers: { authorization: `Bearer ${a.citizen_secret}`, "content-type": "application/json" },
            body: '{"content": "x',
          }),
        );
        expect(malformed.status).toBe(400);
        expect(await versionsOf(a.did)).toBe(0);
        expect((await write(a.citizen_secret, { content: "fine", label: "l".repeat(200) })).body.version).toBe(1);
      });

      it("answers a bad version parameter with a 400 problem", async () => {
        const a = await admit();
        await write(a.citizen_secret, { content: "one" });
        for (const query of [
          "?version=0",
          `?version=${C.versions + 1}`,
          "?version=-1",
          "?version=1.5",
          "?version=abc",
          "?version=LATEST",
          "?version=99999999999",
          "?version=1&version=2",
        ]) {
          expectProblem(await read(a.citizen_secret, query), 400, "bad_request");
        }
      });
    });

    describe("privacy", () => {
      it("shows a citizen only its own shelf: another citizen's secret sees no version of it", async () => {
        const a = await admit();
        const b = await admit();
        const mark = `checkpoint-of-a-${randomBytes(8).toString("hex")}`;
        await write(a.citizen_secret, { content: mark, label: mark });
        const listed = await read(b.citizen_secret);
        expect(listed.status).toBe(200);
        expect(listed.body.checkpoints).toEqual([]);
        for (const query of ["?version=1", "?version=latest"]) {
          const answer = expectProblem(await read(b.citizen_secret, query), 404, "not_found");
          expect(JSON.stringify(answer)).not.toContain(mark);
        }
        // b's first version is b's own version 1; a's shelf is untouched.
        expect((await write(b.citizen_secret, { content: "b's own" })).body.version).toBe(1);
        expect((await read(a.citizen_secret, "?version=1")).body.content).toBe(mark);
      });

      it("refuses every checkpoint door without credentials, or with a DID or an unknown secret, with 401", async () => {
        const a = await admit();
        const mark = `hidden-${randomBytes(8).toString("hex")}`;
        await write(a.citizen_secret, { content: mark });
        for (const bearer of [undefined, a.did, citySecretLike()]) {
          for (const answer of [
            await read(bearer),
            await read(bearer, "?version=1"),
            await read(bearer, "?version=latest"),
            await write(bearer, { content: "intruder" }),
          ]) {
            expectProblem(answer, 401, "unauthorized");
            expect(JSON.stringify(answer.body)).not.toContain(mark);
          }
        }
        expect(await versionsOf(a.did)).toBe(1);
      });
    });

    describe("refused content", () => {
      it("refuses a PEM private key in the content or a city secret in the label with 422: nothing stored, nothing echoed", async () => {
        const a = await admit();
        const key = pemPrivateKey();
        const secret = citySecretLike();
        const answers = [
          await write(a.citizen_secret, { content: `remember:\n${key}` }),
          await write(a.citizen_secret, { content: "harmless", label: secret }),
        ];
        for (const answer of answers) {
          expectProblem(answer, 422, "content_refused");
          const text = JSON.stringify(answer.body);
          expect(text).not.toContain(key.split("\n")[1]!.slice(0, 40));
          expect(text).not.toContain(secret);
        }
        expect(await versionsOf(a.did)).toBe(0);
        const refusals = await t().db.select().from(contentRefusals).where(eq(contentRefusals.did, a.did));
        expect(refusals.map((r) => r.door)).toEqual(["keep-checkpoint", "keep-checkpoint"]);
        // The next clean write is version 1: refusals take no version number.
        expect((await write(a.citizen_secret, { content: "clean" })).body.version).toBe(1);
      });
    });

    describe("restriction", () => {
      it("refuses a restricted citizen's checkpoint with 403 and leaves its shelf readable and untouched", async () => {
        const a = await admit();
        await write(a.citizen_secret, { content: "before restriction", label: "kept" });
        const rows = JSON.stringify(await t().db.select().from(checkpoints).where(eq(checkpoints.did, a.did)));
        await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, a.did));
        expectProblem(await write(a.citizen_secret, { content: "while restricted" }), 403, "forbidden");
        expect((await read(a.citizen_secret)).body.checkpoints).toHaveLength(1);
        expect((await read(a.citizen_secret, "?version=latest")).body).toMatchObject({ version: 1, content: "before restriction", label: "kept" });
        expect(JSON.stringify(await t().db.select().from(checkpoints).where(eq(checkpoints.did, a.did)))).toBe(rows);
      });
    });

    describe("limits and concurrency", () => {
      it("keeps a version of exactly 32768 UTF-8 bytes and refuses 32769 with 413, counting bytes not characters", async () => {
        const a = await admit();
        expect((await write(a.citizen_secret, { content: "c".repeat(C.bytesPerVersion) })).body).toMatchObject({ version: 1, bytes: C.bytesPerVersion });
        const over = expectProblem(await write(a.citizen_secret, { content: "c".repeat(C.bytesPerVersion + 1) }), 413, "payload_too_large");
        expect(over.limit).toMatchObject({ name: "version_bytes", limit: C.bytesPerVersion });
        expect((await write(a.citizen_secret, { content: "é".repeat(C.bytesPerVersion / 2) })).body).toMatchObject({ version: 2, bytes: C.bytesPerVersion });
        expectProblem(await write(a.citizen_secret, { content: `${"é".repeat(C.bytesPerVersion / 2)}.` }), 413, "payload_too_large");
        // A full version of characters JSON escapes six bytes wide still fits the door's body limit.
        expect((await write(a.citizen_secret, { content: "\u0002".repeat(C.bytesPerVersion), label: "\u0003".repeat(200) })).body.version).toBe(3);
        expect(await versionsOf(a.did)).toBe(3);
      });

      it("keeps the 12th version and refuses the 13th with 409 limit_reached, evicting nothing", async () => {
        const a = await admit();
        for (let v = 1; v <= C.versions; v++) expect((await write(a.citizen_secret, { content: `version ${v}` })).body.version).toBe(v);
        const over = expectProblem(await write(a.citizen_secret, { content: "version 13" }), 409, "limit_reached");
        expect(over.limit).toMatchObject({ name: "versions", limit: C.versions });
        expect(await versionsOf(a.did)).toBe(C.versions);
        expect((await read(a.citizen_secret, "?version=1")).body.content).toBe("version 1");
        expect((await read(a.citizen_secret, "?version=latest")).body).toMatchObject({ version: C.versions, content: `version ${C.versions}` });
        // Still full on a later try: append-only, so the shelf never frees a slot.
        expectProblem(await write(a.citizen_secret, { content: "version 13 again" }), 409, "limit_reached");
      });

      it("stores exactly 12 of 20 parallel writes by one citizen, numbered 1 to 12 with no gap or collision", async () => {
        const a = await admit();
        const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => write(a.citizen_secret, { content: `parallel ${i}` })));
        const kept = answers.filter((r) => r.status === 200);
        expect(kept).toHaveLength(C.versions);
        for (const refused of answers.filter((r) => r.status !== 200)) expectProblem(refused, 409, "limit_reached");
        expect(kept.map((r) => r.body.version).sort((x, y) => x - y)).toEqual(Array.from({ length: C.versions }, (_, i) => i + 1));
        const rows = await t().db.select().from(checkpoints).where(eq(checkpoints.did, a.did)).orderBy(asc(checkpoints.version));
        expect(rows.map((r) => r.version)).toEqual(Array.from({ length: C.versions }, (_, i) => i + 1));
        // Each stored row is the write that was answered with its number, with a matching hash.
        for (const row of rows) {
          const i = answers.findIndex((r) => r.status === 200 && r.body.version === row.version);
          expect(row.content).toBe(`parallel ${i}`);
          expect(row.sha256).toBe(sha256(row.content));
        }
      });
    });

    describe("latest checkpoint for the return delta", () => {
      it("answers null for an empty shelf, then the latest version's metadata, verified, in one query", async () => {
        const a = await admit();
        expect(await latestCheckpoint(t().db, a.did)).toBeNull();
        await write(a.citizen_secret, { content: "first" });
        const second = (await write(a.citizen_secret, { content: "second ✓", label: "two" })).body;
        const latest = await latestCheckpoint(t().db, a.did);
        expect(latest).toEqual({
          version: 2,
          sha256: second.sha256,
          bytes: second.bytes,
          label: "two",
          createdAt: new Date(second.created_at),
          verified: true,
        });
      });

      it("reports verified=false when the latest row's content was changed behind the city's back", async () => {
        const a = await admit();
        await write(a.citizen_secret, { content: "original one" });
        const kept = (await write(a.citizen_secret, { content: "original two" })).body;
        await asOwner(t(), `UPDATE checkpoints SET content = 'forged two' WHERE did = '${a.did}' AND version = 2`);
        const latest = await latestCheckpoint(t().db, a.did);
        expect(latest).toMatchObject({ version: 2, sha256: kept.sha256, verified: false });
        // Tampering with an older version does not change what the latest reports about itself.
        const b = await admit();
        await write(b.citizen_secret, { content: "b one" });
        await write(b.citizen_secret, { content: "b two" });
        await asOwner(t(), `UPDATE checkpoints SET content = 'forged one' WHERE did = '${b.did}' AND version = 1`);
        expect(await latestCheckpoint(t().db, b.did)).toMatchObject({ version: 2, verified: true });
        // The triggers are back on.
        await expectAppendOnly(t(), "checkpoints", [`UPDATE checkpoints SET content = 'again' WHERE did = '${a.did}'`]);
      });
    });

    describe("append-only", () => {
      it("refuses UPDATE, DELETE and TRUNCATE on checkpoints, leaving every row", async () => {
        const a = await admit();
        await write(a.citizen_secret, { content: "kept forever" });
        const snapshot = async () => JSON.stringify(await t().db.execute(sql.raw("SELECT * FROM checkpoints ORDER BY did, version")));
        const before = await snapshot();
        for (const statement of [
          "UPDATE checkpoints SET content = 'edited'",
          `UPDATE checkpoints SET sha256 = repeat('0', 64) WHERE did = '${a.did}'`,
          `DELETE FROM checkpoints WHERE did = '${a.did}'`,
          "DELETE FROM checkpoints",
          "TRUNCATE checkpoints",
        ]) {
          await expect(t().raw(statement), statement).rejects.toSatisfy((err: unknown) => causes(err).includes("append-only"));
        }
        expect(await snapshot()).toBe(before);
      });
    });
  },
  { neon: "transactions and locks: version numbers raced through one pool" },
);

/** Edits rows the way only an owner can: with the append-only triggers switched off for the moment. */
async function asOwner(db: TestDatabase, statement: string) {
  await db.raw("ALTER TABLE checkpoints DISABLE TRIGGER USER");
  try {
    await db.raw(statement);
  } finally {
    await db.raw("ALTER TABLE checkpoints ENABLE TRIGGER USER");
  }
}
