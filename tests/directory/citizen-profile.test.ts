import { beforeAll, expect, it } from "vitest";
import { readCitizenProfile } from "@/lib/city/directory";
import { useDatabase } from "@/lib/city/database";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { exportResidency } from "@/lib/doors/declarations/residency/residency";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

describeOnDatabases("a citizen's page as the domain reads it (readCitizenProfile)", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("reads a citizen's directory row, tier and residency log rows newest first, and dates its standing from the row it stands on", async () => {
    const { did, citizen_secret: secret, bed_id } = await admit();
    const now = new Date();
    const bound = await readCitizenProfile(t().db, did, now);
    if (bound.state !== "listed") throw new Error(`expected listed, got ${bound.state}`);
    expect(bound.peer).toMatchObject({ fingerprint: did, bed_id, residency_status: "bound", present: true });
    expect(bound.tier).toBe("citizen");
    expect(bound.residency.map((r) => r.event)).toEqual(["admit"]);
    expect(bound.since).toEqual(bound.residency[0]);

    await callDoor(liveDoor, { body: { action: "leave" }, bearer: secret });
    const away = await readCitizenProfile(t().db, did, new Date());
    if (away.state !== "listed") throw new Error(`expected listed, got ${away.state}`);
    expect(away.residency.map((r) => r.event)).toEqual(["exit", "admit"]);
    expect(away.residency.every((r) => r.did === did)).toBe(true);
    expect(away.since?.event).toBe("exit");

    await callDoor(liveDoor, { body: { action: "return" }, bearer: secret });
    const back = await readCitizenProfile(t().db, did, new Date());
    if (back.state !== "listed") throw new Error(`expected listed, got ${back.state}`);
    expect(back.residency.map((r) => r.event)).toEqual(["return", "exit", "admit"]);
    expect(back.since).toEqual(back.residency[0]);
    // A limit keeps the newest rows.
    const newest = await readCitizenProfile(t().db, did, new Date(), 1);
    expect(newest.state === "listed" && newest.residency.map((r) => r.event)).toEqual(["return"]);
  });

  it("says an exported citizen exported and nothing else, and a DID no citizen holds is unknown", async () => {
    const { did, citizen_secret: secret } = await admit();
    expect((await callDoor(exportResidency, { body: {}, bearer: secret })).status).toBe(200);
    expect(await readCitizenProfile(t().db, did, new Date())).toEqual({ state: "exported" });
    expect(await readCitizenProfile(t().db, "0".repeat(64), new Date())).toEqual({ state: "unknown" });
    expect(await readCitizenProfile(t().db, "not-a-did", new Date())).toEqual({ state: "unknown" });
  });
});
