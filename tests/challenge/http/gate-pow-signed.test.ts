import { expect, it } from "vitest";
import { presentation } from "../../support/gate";
import { type Answer, describeOnServer, usePostgresCity } from "../../support/postgres-city";
import { newKey } from "../../support/signed";
import { signedCall } from "../../support/signed-http";

/*
 * Item 6 of issue 43 through `next start` on PostgreSQL: a request signed with a key bound to a
 * citizen (CITY-SIG/1) needs no work. Past the open share a bare presentation is filtered with the
 * suggested effort, while the same presentation signed with a citizen's controller key is admitted
 * with no pow_solution (and no nonce): a newcomer's signature from the step's portion of bids, a
 * settled citizen's from the reserve too (security-postgres-gate-shares.test.ts).
 */
describeOnServer("a presentation signed with a bound key through next start", () => {
  // 8 admissions an hour, 20% kept for presentations settled citizens sign: 6 for the rest, 4 of them (the open share) without a bid.
  const city = usePostgresCity("gate-pow-signed", { CITY_GATE_ADMISSIONS_PER_HOUR: "8", CITY_GATE_RESERVE_PERCENT: "20" });
  const present = (body: Record<string, unknown>): Promise<Answer> =>
    city().call("/gate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("admits a CITY-SIG/1-signed presentation past the open share without work, where a bare one is refused with the effort", async () => {
    // A citizen whose controller key is bound at its first admission (one of the open share's 4).
    const key = await newKey();
    const nonce = (await city().get("/gate")).body.nonce as string;
    const owner = await present(presentation({ nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce) }));
    expect(owner.body.verdict, JSON.stringify(owner.body)).toBe("admitted");
    for (let i = 0; i < 3; i++) expect((await present(presentation())).body.verdict).toBe("admitted");
    const before = await city().count("citizens");

    const bare = await present(presentation());
    expect(bare.status).toBe(200);
    expect(bare.body).toMatchObject({ verdict: "filtered", rule: "flood", suggested_effort: expect.any(Number) });
    const effort = bare.body.suggested_effort as number;
    expect(effort).toBeGreaterThanOrEqual(12);
    expect(bare.headers.get("city-pow-effort")).toBe(String(effort));
    // When to present again without a bid: in the verdict and in Retry-After, as a 429 says it.
    expect(bare.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(bare.headers.get("retry-after")).toBe(String(bare.body.retry_after_seconds));

    // The same kind of presentation, signed with the bound key: admitted, no work and no nonce (the step's one bid).
    const body = presentation();
    const signed = await signedCall(city().server.baseUrl, key, "POST", "/gate", { body });
    expect(signed.status, JSON.stringify(signed.body)).toBe(200);
    expect(signed.body.verdict, JSON.stringify(signed.body)).toBe("admitted");
    expect(signed.body.name ?? body.name).toBe(body.name);
    expect(await city().count("citizens")).toBe(before + 1);
    expect(await city().count("citizens", `name = '${body.name}'`)).toBe(1);

    // A key bound to no citizen proves nothing: its signed presentation is no bid.
    const stranger = await signedCall(city().server.baseUrl, await newKey(), "POST", "/gate", { body: presentation() });
    expect(stranger.status, JSON.stringify(stranger.body)).toBe(401);
    expect(stranger.body.code).toBe("unknown_key");
    expect(await city().count("citizens")).toBe(before + 1);
  }, 180_000);
});
