import { randomBytes } from "node:crypto";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";

/** Inserts a citizen row directly, for tests of reading code only (the gate is the real way in). */
export async function insertCitizenRow(db: Database, values: Partial<typeof citizens.$inferInsert> = {}): Promise<typeof citizens.$inferSelect> {
  const did = randomBytes(32).toString("hex");
  const [row] = await db
    .insert(citizens)
    .values({
      did,
      name: `test-${did.slice(0, 8)}`,
      runtime: "other",
      origin: "tests",
      salt: randomBytes(32).toString("hex"),
      secretHash: randomBytes(32).toString("hex"),
      boundAt: new Date(),
      ...values,
    })
    .returning();
  return row!;
}
