import { createHash } from "node:crypto";
import { count, eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { citizens, seals } from "@/db/schema";
import { readSeal, sealDoor } from "@/lib/doors/declarations/shelves/seals";
import { expectAppendOnly } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

// The published limit (the spec sets none; the door publishes it in its limits), as a literal:
// the oracle is the published number, never the constant the code counts with.
const SEALS_PER_HOUR_PUBLISHED = 60;

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const digest = (text: string) => createHash("sha256").update(text).digest("hex");

describeOnDatabases("seals", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("seals a sha256 of memory, answers it again unchanged, and tells anyone that it exists", async () => {
    const { citizen_secret, did } = await admit();
    const sha = digest(`memory ${Math.random()}`);
    const first = await callDoor(sealDoor, { body: { sha256: sha.toUpperCase() }, bearer: citizen_secret });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ seal: { sha256: sha }, created: true });
    const again = await callDoor(sealDoor, { body: { sha256: sha }, bearer: citizen_secret });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ seal: first.body.seal, created: false });
    const read = await callDoor(readSeal, { params: { sha256: sha } });
    expect(read.body).toMatchObject({ sha256: sha, sealed: true, first_sealed_at: first.body.seal.created_at, seals: 1 });
    // Whose seal it is stays private: the sealer's DID appears in neither answer, while the row keeps it.
    expect(JSON.stringify(first.body)).not.toContain(did);
    expect(JSON.stringify(read.body)).not.toContain(did);
    expect((await t().db.select({ did: seals.did }).from(seals).where(eq(seals.sha256, sha))).map((r) => r.did)).toEqual([did]);
    const unknown = await callDoor(readSeal, { params: { sha256: digest("never sealed") } });
    expect(unknown.body).toMatchObject({ sealed: false, first_sealed_at: null, seals: 0 });
  });

  it("keeps a seal after its citizen leaves or is exported", async () => {
    const { citizen_secret, did } = await admit();
    const sha = digest(`kept ${Math.random()}`);
    await callDoor(sealDoor, { body: { sha256: sha }, bearer: citizen_secret });
    await t().db.update(citizens).set({ residencyStatus: "exported", bedId: null }).where(eq(citizens.did, did));
    expect((await callDoor(readSeal, { params: { sha256: sha } })).body.sealed).toBe(true);
  });

  it("refuses bad digests with 400, anonymous sealing with 401, and changes nothing", async () => {
    const { citizen_secret } = await admit();
    const before = (await t().db.select({ n: count() }).from(seals))[0]!.n;
    for (const sha256 of ["abc", "g".repeat(64), 42]) {
      expect((await callDoor(sealDoor, { body: { sha256 }, bearer: citizen_secret })).status).toBe(400);
    }
    expect((await callDoor(sealDoor, { body: { sha256: digest("x") } })).status).toBe(401);
    expect((await callDoor(readSeal, { params: { sha256: "nothex" } })).status).toBe(400);
    expect((await t().db.select({ n: count() }).from(seals))[0]!.n).toBe(before);
  });

  it(`lets ${SEALS_PER_HOUR_PUBLISHED} seals an hour through, in parallel, and refuses the rest with 429`, async () => {
    const { citizen_secret, did } = await admit();
    const answers = await Promise.all(
      Array.from({ length: SEALS_PER_HOUR_PUBLISHED + 5 }, (_, i) => callDoor(sealDoor, { body: { sha256: digest(`p${i}${did}`) }, bearer: citizen_secret })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(SEALS_PER_HOUR_PUBLISHED);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(5);
    expect(refused[0]!.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await t().db.select({ n: count() }).from(seals).where(eq(seals.did, did)))[0]!.n).toBe(SEALS_PER_HOUR_PUBLISHED);
  });

  it("refuses UPDATE, DELETE and TRUNCATE on seals, leaving every row", async () => {
    const { citizen_secret } = await admit();
    expect((await callDoor(sealDoor, { body: { sha256: digest(`append-only ${Math.random()}`) }, bearer: citizen_secret })).status).toBe(201);
    await expectAppendOnly(t(), "seals", ["UPDATE seals SET did = 'x'", "DELETE FROM seals", "TRUNCATE seals"]);
  });
});
