import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { doorHints, pathParams, type AnyDoor } from "@/lib/doors/door";
import { sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { annotationsOf } from "@/lib/doors/surfaces/mcp";
import { postRoom } from "@/lib/doors/declarations/posts/posts";
import { registry } from "@/lib/doors/registry";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases } from "../support/databases";
import { tableDigests } from "../support/table-state";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

const PARAMS: Record<string, string> = { bag: "notes", room: "lobby", sha256: "a".repeat(64), id: "1", tile: "0/000.p/1" };

describeOnDatabases("reading doors write nothing", (t) => {
  beforeAll(() => useDatabase(t().db));

  /**
   * Every table's row count and a digest of its content. last_seen_at is the one column a proven
   * reading call may move (presence is the desk's record of proven calls, spec "Directory presence"),
   * so for a citizen's call city_versions is left out: its triggers count every change to citizens,
   * that one included. A visitor's call must leave it unchanged too.
   */
  function snapshot(asCitizen: boolean): Promise<Record<string, string>> {
    return tableDigests(t().db, { except: asCitizen ? ["city_versions"] : [], ignoreColumn: "last_seen_at" });
  }

  const readingDoors = registry.filter((d) => d.method === "GET");

  async function callEvery(bearer?: string): Promise<void> {
    for (const door of readingDoors) {
      const params = Object.fromEntries(pathParams(door.path).map((p) => [p, PARAMS[p]!]));
      const answer = await callDoor(door, { bearer, params });
      expect(answer.status, `${door.name}: ${JSON.stringify(answer.body).slice(0, 200)}`).toBeLessThan(500);
    }
  }

  // Something in every inbox, room and shelf the reading doors show, set once for the tests below
  // (one test per door: each has the time limit of its own two calls and four snapshots, where one
  // test of every door took past 30 s on a busy machine).
  const callers: { visitor?: string; citizen?: string } = {};
  beforeAll(async () => {
    const writer = await admit();
    const reader = await admit();
    await callDoor(sendMessageDoor, { bearer: writer.citizen_secret, body: { to: reader.did, body: "unread until marked" } });
    await callDoor(postRoom, { bearer: writer.citizen_secret, params: { room: "lobby" }, body: { body: "hello lobby" } });
    await callDoor(writeVault, { bearer: reader.citizen_secret, body: { content: "mine" } });
    callers.citizen = reader.citizen_secret;
  });

  const pure = readingDoors.filter((d) => doorHints(d).readOnly);

  it("declares every GET door that writes a row", () => {
    const declaredWriters = readingDoors
      .filter((d) => !doorHints(d).readOnly)
      .map((d) => d.name)
      .sort();
    // The GET doors that issue something (a gate nonce counted on its address, a proof challenge), create the signing key
    // once, or remember the verified log head say so on their declaration.
    expect(declaredWriters).toEqual(
      [
        "describe-gate",
        "read-agent-card",
        "read-card",
        "read-jwks",
        "read-log-checkpoint",
        "read-identity-log-checkpoint",
        "read-peer-keys",
        "read-prove-challenge",
        "sync-log-witnesses",
        "sync-identity-log-witnesses",
        "verify-residency-log",
        "verify-identity-log",
      ].sort(),
    );
  });

  for (const door of pure) {
    it(`changes no row through ${door.name}, as visitor or as citizen`, async () => {
      for (const bearer of [callers.visitor, callers.citizen!]) {
        const before = await snapshot(bearer !== undefined);
        const params = Object.fromEntries(pathParams(door.path).map((p) => [p, PARAMS[p]!]));
        const answer = await callDoor(door, { bearer, params });
        expect(answer.status, door.name).toBeLessThan(500);
        expect(await snapshot(bearer !== undefined), `${door.name} as ${bearer ? "citizen" : "visitor"}`).toEqual(before);
      }
    });
  }

  it("answers every GET door, declared writers included, as a citizen without a 5xx", async () => {
    await callEvery(callers.citizen!);
  });

  it("annotates every tool from what its door does: read-only, idempotent, destructive", () => {
    const byName = new Map(registry.map((d: AnyDoor) => [d.name, annotationsOf(d)]));
    expect(byName.get("read-inbox")).toMatchObject({ readOnlyHint: true, idempotentHint: true, destructiveHint: false });
    expect(byName.get("mark-mail-read")).toMatchObject({ readOnlyHint: false, idempotentHint: true, destructiveHint: false });
    expect(byName.get("describe-gate")).toMatchObject({ readOnlyHint: false, idempotentHint: false });
    expect(byName.get("export-residency")).toMatchObject({ readOnlyHint: false, idempotentHint: false, destructiveHint: true });
    expect(byName.get("send-message")).toMatchObject({ readOnlyHint: false, idempotentHint: false, destructiveHint: false });
    expect(byName.get("revoke-token")).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    for (const [name, hints] of byName) {
      if (hints.readOnlyHint) expect(hints.destructiveHint, name).toBe(false);
    }
  });
});
