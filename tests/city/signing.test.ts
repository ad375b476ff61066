import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { signingKeys } from "@/db/schema";
import { activeSigningKey, forgetSigningKey, readOrCreateSigningKey } from "@/lib/city/signing";
import { describeOnDatabases } from "../support/databases";

describeOnDatabases("the city's signing key kept in the database", (t) => {
  beforeAll(() => {
    delete process.env.CITY_SIGNING_KEY;
  });

  it("is generated once: parallel first starts of many instances all sign with the same key", async () => {
    const { db } = t();
    const keys = await Promise.all(Array.from({ length: 8 }, () => readOrCreateSigningKey(db)));
    expect(new Set(keys.map((k) => k.kid)).size).toBe(1);
    expect(new Set(keys.map((k) => k.publicJwk.x)).size).toBe(1);
    const rows = await db.select().from(signingKeys);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.kid).toBe(keys[0]!.kid);
    expect((await readOrCreateSigningKey(db)).kid).toBe(keys[0]!.kid);
  });
});

describeOnDatabases("the city's first signature, made inside a transaction that rolls back", (t) => {
  beforeAll(() => {
    delete process.env.CITY_SIGNING_KEY;
    forgetSigningKey();
  });
  afterAll(() => forgetSigningKey());

  it("keeps no key made inside it: the instance then signs with the key the city stored", async () => {
    const { db } = t();
    let made: string | undefined;
    const failing = db.transaction(async (tx) => {
      made = (await activeSigningKey(tx as Database)).kid;
      throw new Error("the write failed after signing");
    });
    await expect(failing).rejects.toThrow("the write failed after signing");
    expect(made).toBeDefined();
    expect(await db.select().from(signingKeys)).toHaveLength(0);

    const kept = await activeSigningKey(db);
    expect(kept.kid).not.toBe(made);
    expect((await db.select().from(signingKeys)).map((row) => row.kid)).toEqual([kept.kid]);
  });
});
