import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { type AnyDoor, pathParams } from "@/lib/doors/door";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { keepLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { recoverDoor } from "@/lib/doors/declarations/keys/recover";
import { registry } from "@/lib/doors/registry";
import { mintToken, revokeToken } from "@/lib/doors/declarations/keys/tokens";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { keepCheckpoint } from "@/lib/doors/declarations/shelves/checkpoints";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";
import { recordFigures } from "../support/figures";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";
process.env.CITY_OPERATOR_SECRET = "operator-secret-for-the-auth-suite-0123456789abcdef";

/** Doors that need a credential, straight from the registry: a new door is covered as it lands. */
const guarded = registry.filter((d) => d.auth === "citizen" || d.auth === "operator");

/** Doors that hand out credentials and take the citizen secret only (requireCitizenSecret), with the body that asks for it. */
const SECRET_ONLY: [AnyDoor, unknown][] = [
  [mintToken, {}],
  [recoverDoor, { mint: true }],
];

/** A path parameter that parses for every door (ids, names, hex digests). */
const PARAM_VALUE: Record<string, string> = { id: "1", bag: "notes", room: "lobby", sha256: "a".repeat(64) };

async function call(door: AnyDoor, authorization: string | undefined, body?: unknown) {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  let path = door.path;
  const params: Record<string, string> = {};
  for (const name of pathParams(door.path)) {
    params[name] = PARAM_VALUE[name] ?? "x";
    path = path.replace(`{${name}}`, params[name]!);
  }
  const init: RequestInit = { method: door.method, headers };
  if (door.method !== "GET" && door.method !== "DELETE") {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body ?? {});
  }
  const response = await serveDoor(door, new Request(`http://city.test${path}`, init), params);
  return { status: response.status, text: await response.text(), type: response.headers.get("content-type") ?? "" };
}

describeOnDatabases("every guarded door refuses every wrong credential", (t) => {
  /** Marks only the victim's data carries: none of them may appear in an answer to anyone else. */
  const marker = `victim-marker-${Math.random().toString(36).slice(2)}`;
  let victim: Awaited<ReturnType<typeof admit>>;
  let other: Awaited<ReturnType<typeof admit>>;
  const wrong: Record<string, string | undefined> = {};
  let refusals = 0;
  // After every test of the suite, whatever order they ran in.
  afterAll(() => recordFigures(`auth-${t().driver}`, { [`auth_refusals_${t().driver}`]: refusals }));

  beforeAll(async () => {
    useDatabase(t().db);
    victim = await admit();
    other = await admit();
    const bearer = victim.citizen_secret;
    await callDoor(keepLockerBag, { bearer, body: { bag: "notes", content: marker } });
    await callDoor(writeVault, { bearer, body: { content: marker } });
    await callDoor(keepCheckpoint, { bearer, body: { content: marker, label: marker } });

    const revoked = (await callDoor(mintToken, { bearer: other.citizen_secret, body: {} })).body.token as string;
    expect((await callDoor(revokeToken, { bearer: revoked })).status).toBe(200);
    const expired = (await callDoor(mintToken, { bearer: other.citizen_secret, body: { ttl_seconds: 60 } })).body.token as string;
    await t().raw(`UPDATE session_tokens SET expires_at = now() - interval '1 second' WHERE expires_at > now() AND expires_at < now() + interval '2 minutes'`);

    // A recovered citizen: its spent code and its old secret open nothing.
    const recovered = await admit();
    const codes = (await callDoor(recoverDoor, { bearer: recovered.citizen_secret, body: { mint: true } })).body.codes as string[];
    const redeemed = await callDoor(recoverDoor, { body: { did: recovered.did, code: codes[0] } });
    expect(redeemed.status).toBe(200);

    const look = await callDoor(presentGate, { body: presentation({ ask: "look" }) });
    expect(look.body.receipt).toEqual(expect.any(String));

    Object.assign(wrong, {
      "no Authorization": undefined,
      "an empty Bearer": "Bearer ",
      "a malformed Bearer": "Bearer city_sk_not-hex-at-all",
      "another scheme": `Basic ${Buffer.from(`x:${victim.citizen_secret}`).toString("base64")}`,
      "the secret without its Bearer prefix": victim.citizen_secret,
      "the secret without its city_sk_ prefix": `Bearer ${victim.citizen_secret.replace("city_sk_", "")}`,
      "a revoked token": `Bearer ${revoked}`,
      "an expired token": `Bearer ${expired}`,
      "a DID": `Bearer ${victim.did}`,
      "a look receipt": `Bearer ${look.body.receipt}`,
      "a spent recovery code": `Bearer ${codes[0]}`,
      "an unused recovery code": `Bearer ${codes[1]}`,
      "the old secret after recovery": `Bearer ${recovered.citizen_secret}`,
      "the citizen key": `Bearer ${victim.citizen_key}`,
    });
  });

  for (const door of guarded) {
    describe(`${door.name} (${door.method} ${door.path}, ${door.auth})`, () => {
      it("answers 401 or 403 to every wrong credential, with nothing of anyone's data", async () => {
        const credentials = { ...wrong };
        if (door.auth === "operator") credentials["a citizen secret"] = `Bearer ${victim.citizen_secret}`;
        for (const [what, authorization] of Object.entries(credentials)) {
          const answer = await call(door, authorization);
          refusals += 1;
          expect([401, 403], `${what}: ${answer.status} ${answer.text.slice(0, 200)}`).toContain(answer.status);
          expect(answer.type, what).toMatch(/^application\/problem\+json/);
          expect(answer.text, what).not.toContain(marker);
          expect(answer.text, what).not.toContain(victim.did);
        }
      });

      if (door.auth === "citizen" && door.method === "GET") {
        it("answers another citizen with that citizen's own data only", async () => {
          const answer = await call(door, `Bearer ${other.citizen_secret}`);
          expect(answer.status).toBeLessThan(500);
          expect(answer.text).not.toContain(marker);
          expect(answer.text).not.toContain(victim.did);
        });
      }
    });
  }

  describe("doors that take the citizen secret only", () => {
    for (const [door, body] of SECRET_ONLY) {
      it(`${door.name} refuses a live session token with 403 and every wrong credential with 401 or 403`, async () => {
        const token = (await callDoor(mintToken, { bearer: other.citizen_secret, body: {} })).body.token as string;
        const withToken = await call(door, `Bearer ${token}`, body);
        expect(withToken.status, withToken.text).toBe(403);
        for (const [what, authorization] of Object.entries(wrong)) {
          const answer = await call(door, authorization, body);
          refusals += 1;
          expect([401, 403], `${what}: ${answer.status} ${answer.text.slice(0, 200)}`).toContain(answer.status);
          expect(answer.text).not.toContain("city_rc_");
        }
      });
    }
  });

  it("the victim's own secret still reads its own data (the suite's wrong credentials are really wrong)", async () => {
    const answer = await callDoor(writeVault, { bearer: victim.citizen_secret, body: { content: "still me" } });
    expect(answer.status).toBe(200);
    const rows = (await t().db.execute(sql.raw(`SELECT count(*) AS n FROM vault_notes WHERE content = '${marker}'`))) as unknown;
    expect(Number(((rows as { rows?: { n: unknown }[] }).rows ?? (rows as { n: unknown }[]))[0]!.n)).toBe(1);
  });
});
