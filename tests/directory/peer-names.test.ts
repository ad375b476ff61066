import { randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import { countingQueries } from "@/db/query-count";
import { peerNames } from "@/lib/city/directory";
import { insertCitizenRow } from "../support/citizens";
import { describeOnDatabases } from "../support/databases";

// Counted per statement (Drizzle's logger), as the round-trip budgets are.
process.env.CITY_COUNT_QUERIES = "1";

describeOnDatabases("the names the plat shows beside DIDs (log rows, signed ward notes)", (t) => {
  it("names bound and away citizens in one statement, and never an exported one or a DID that names no citizen", async () => {
    const bound = await insertCitizenRow(t().db, { name: "Ελένη η βιβλιοθηκάριος" });
    const away = await insertCitizenRow(t().db, { name: "研究助手 小明", residencyStatus: "away" });
    const exported = await insertCitizenRow(t().db, { name: "gone-for-good", residencyStatus: "exported" });
    const nobody = randomBytes(32).toString("hex");
    const { value, queries } = await countingQueries(() => peerNames(t().db, [bound.did, away.did, exported.did, nobody, bound.did, null, "not-a-did"]));
    expect(Object.fromEntries(value)).toEqual({ [bound.did]: "Ελένη η βιβλιοθηκάριος", [away.did]: "研究助手 小明" });
    expect(queries).toBe(1);
  });

  it("sends nothing when there is no DID to name", async () => {
    const { value, queries } = await countingQueries(() => peerNames(t().db, [null, "x"]));
    expect(value.size).toBe(0);
    expect(queries).toBe(0);
  });
});
