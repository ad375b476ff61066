import { beforeAll, expect, it } from "vitest";
import { signingKeys } from "@/db/schema";
import { readOrCreateSigningKey } from "@/lib/city/signing";
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
