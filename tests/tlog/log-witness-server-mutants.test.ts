import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createWitness, startWitnessServer, witnessVkey } from "@/lib/tlog/witness";
import { mth, refKey, refProof } from "../support/rfc9162-reference";

/**
 * The reference witness (lib/tlog/witness.ts) over the tlog-witness wire, with
 * checkpoints, proofs and the expected cosignatures built by the independent references
 * (tests/support/rfc9162-reference.ts: node:crypto), never by the code judged.
 */
const ORIGIN = "city.example/log";
const CITY = refKey(new Uint8Array(32).fill(1));
const OTHER = refKey(new Uint8Array(32).fill(2));
const WITNESS_SEED = new Uint8Array(32).fill(3);
const WITNESS = refKey(WITNESS_SEED);
const NAME = "witness.example/w1";
const NOW_S = 1_800_000_000;
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
const DATA = Array.from({ length: 300 }, (_, i) => Uint8Array.of(i & 0xff, i >> 8));

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function statePath(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "witness-"));
  dirs.push(dir);
  return path.join(dir, "state.json");
}
const witness = (state = statePath(), logs = [CITY.vkey(ORIGIN)]) => ({
  state,
  handle: createWitness({ name: NAME, seed: WITNESS_SEED, logs, statePath: state, now: () => NOW_S * 1000 + 999 }),
});

const bodyOf = (size: number, origin = ORIGIN, data = DATA) => `${origin}\n${size}\n${b64(mth(data.slice(0, size)))}\n`;
const noteOf = (size: number, origin = ORIGIN, key = CITY, data = DATA) => `${bodyOf(size, origin, data)}\n${key.signLine(origin, bodyOf(size, origin, data))}`;
const request = (old: number, size: number, proof = refProof(old, DATA.slice(0, size)).map(b64), note = noteOf(size)) =>
  `old ${old}\n${proof.map((p) => `${p}\n`).join("")}\n${note}`;
const ok = (size: number) => ({ status: 200, contentType: "text/plain; charset=utf-8", body: WITNESS.cosignLine(NAME, bodyOf(size), NOW_S) });
const plain = (status: number, body: string) => ({ status, contentType: "text/plain; charset=utf-8", body: `${body}\n` });

describe("the reference witness", () => {
  it("publishes its cosigner vkey", () => {
    expect(witnessVkey(NAME, WITNESS_SEED)).toBe(WITNESS.vkey(NAME, 4));
  });

  it("cosigns a first checkpoint, then each consistent extension, and keeps the latest", async () => {
    const { state, handle } = witness();
    expect(existsSync(state)).toBe(false);
    expect(await handle("POST", "/add-checkpoint", request(0, 5))).toEqual(ok(5));
    expect(JSON.parse(readFileSync(state, "utf8"))).toEqual({ [ORIGIN]: { size: 5, root: b64(mth(DATA.slice(0, 5))) } });
    expect(existsSync(`${state}.tmp`)).toBe(false);
    expect(await handle("POST", "/add-checkpoint", request(5, 300))).toEqual(ok(300));
    // The same checkpoint again: cosigned again.
    expect(await handle("POST", "/add-checkpoint", request(300, 300))).toEqual(ok(300));
    expect(JSON.parse(readFileSync(state, "utf8"))).toEqual({ [ORIGIN]: { size: 300, root: b64(mth(DATA)) } });
    // A new witness over the same file knows it.
    expect(await witness(state).handle("POST", "/add-checkpoint", request(0, 300))).toEqual({ status: 409, contentType: "text/x.tlog.size", body: "300\n" });
  });

  it("cosigns the empty log first, then its extension", async () => {
    const { handle } = witness();
    expect(await handle("POST", "/add-checkpoint", request(0, 0))).toEqual(ok(0));
    expect(await handle("POST", "/add-checkpoint", request(0, 3))).toEqual(ok(3));
  });

  it("answers 409 with the size it holds when the old size is not it", async () => {
    const { handle } = witness();
    expect(await handle("POST", "/add-checkpoint", request(3, 5))).toEqual({ status: 409, contentType: "text/x.tlog.size", body: "0\n" });
    await handle("POST", "/add-checkpoint", request(0, 5));
    expect(await handle("POST", "/add-checkpoint", request(4, 7))).toEqual({ status: 409, contentType: "text/x.tlog.size", body: "5\n" });
  });

  it("refuses a fork at a size it cosigned, and a checkpoint not consistent with it", async () => {
    const { handle } = witness();
    await handle("POST", "/add-checkpoint", request(0, 8));
    const held = b64(mth(DATA.slice(0, 8)));
    const other = DATA.map((d, i) => (i === 2 ? Uint8Array.of(9, 9) : d));
    const forked = request(8, 8, [], noteOf(8, ORIGIN, CITY, other));
    expect(await handle("POST", "/add-checkpoint", forked)).toEqual(
      plain(409, `fork: size 8 was cosigned with root ${held}, this checkpoint has root ${b64(mth(other.slice(0, 8)))} for the same size; refused`),
    );
    const rewritten = request(8, 12, refProof(8, other.slice(0, 12)).map(b64), noteOf(12, ORIGIN, CITY, other));
    expect(await handle("POST", "/add-checkpoint", rewritten)).toEqual(
      plain(422, `fork: the checkpoint of size 12 is not consistent with the one cosigned at size 8 (root ${held}); the log's history was rewritten; refused`),
    );
    // A proof for other sizes.
    expect((await handle("POST", "/add-checkpoint", request(8, 12, refProof(7, DATA.slice(0, 12)).map(b64)))).status).toBe(422);
    expect(await handle("POST", "/add-checkpoint", request(8, 12))).toEqual(ok(12));
  });

  it("refuses a checkpoint of an unknown log or without the log's signature", async () => {
    const { handle } = witness();
    expect(await handle("POST", "/add-checkpoint", request(0, 5, [], noteOf(5, "other.example")))).toEqual(plain(404, "unknown log origin other.example"));
    expect(await handle("POST", "/add-checkpoint", request(0, 5, [], noteOf(5, ORIGIN, OTHER)))).toEqual(
      plain(403, `the checkpoint carries no valid signature by ${ORIGIN}'s key: refused`),
    );
    // Two logs: each by its own key.
    const two = witness(statePath(), [CITY.vkey(ORIGIN), OTHER.vkey("other.example")]).handle;
    expect((await two("POST", "/add-checkpoint", request(0, 5, [], noteOf(5, "other.example", OTHER)))).status).toBe(200);
  });

  it("refuses malformed requests with 400 and says why", async () => {
    const { handle, state } = witness();
    const cases: Array<[string, string]> = [
      [`old 0\n${noteOf(5)}`.replace("\n\n", "\n"), "the body is an old size line, proof lines, an empty line, then the checkpoint"],
      [request(0, 5).replace("old 0", "old 00"), "the first line is 'old <size>'"],
      [request(0, 5).replace("old 0", "old -1"), "the first line is 'old <size>'"],
      [request(0, 5).replace("old 0", " old 0"), "the first line is 'old <size>'"],
      [request(0, 5).replace("old 0", "old 0 "), "the first line is 'old <size>'"],
      [request(0, 5).replace("old 0", "old"), "the first line is 'old <size>'"],
      [`\n\n${noteOf(5)}`, "the first line is 'old <size>'"],
      [request(0, 5, Array(64).fill(b64(new Uint8Array(32)))), "more than 63 consistency proof lines"],
      [request(0, 5, [b64(new Uint8Array(31))]), "a proof line is one base64 hash"],
      [request(0, 5, [b64(new Uint8Array(33))]), "a proof line is one base64 hash"],
      [request(0, 5, [b64(new Uint8Array(32)).replace("=", "")]), "a proof line is one base64 hash"],
      [request(0, 5, [], noteOf(5).slice(0, -1)), "a signed note ends with a newline"],
      [
        request(0, 5, [], `${ORIGIN}\nfive\n${b64(new Uint8Array(32))}\n\n${CITY.signLine(ORIGIN, "x")}`),
        "a checkpoint is an origin, a decimal size and a base64 root hash, one per line",
      ],
      [request(6, 5), "old size 6 is larger than the checkpoint's size 5"],
      [request(0, 5, [b64(new Uint8Array(32))]), "the consistency proof must be empty when the old size is 0"],
    ];
    for (const [body, why] of cases) expect(await handle("POST", "/add-checkpoint", body), why).toEqual(plain(400, why));
    // 63 lines are allowed through to the consistency check.
    expect((await handle("POST", "/add-checkpoint", request(0, 5, Array(63).fill(b64(new Uint8Array(32)))))).body).toBe(
      "the consistency proof must be empty when the old size is 0\n",
    );
    expect(existsSync(state)).toBe(false);
  });

  it("serves POST /add-checkpoint only", async () => {
    const { handle } = witness();
    expect(await handle("POST", "/", request(0, 5))).toEqual(plain(404, "this witness serves POST /add-checkpoint"));
    expect(await handle("GET", "/add-checkpoint", request(0, 5))).toEqual(plain(405, "add-checkpoint is a POST"));
  });

  it("takes one request at a time: of two first checkpoints sent together, one is cosigned and the other told the size", async () => {
    const { handle } = witness();
    const answers = await Promise.all([handle("POST", "/add-checkpoint", request(0, 5)), handle("POST", "/add-checkpoint", request(0, 6))]);
    expect(answers.map((a) => a.status)).toEqual([200, 409]);
    expect(answers[1]!.body).toBe("5\n");
  });

  it("keeps answering after a request that failed to keep its state", async () => {
    const broken = createWitness({
      name: NAME,
      seed: WITNESS_SEED,
      logs: [CITY.vkey(ORIGIN)],
      statePath: path.join(statePath(), "missing", "state.json"),
      now: () => NOW_S * 1000,
    });
    await expect(broken("POST", "/add-checkpoint", request(0, 5))).rejects.toThrow();
    expect(await broken("GET", "/add-checkpoint", "")).toEqual(plain(405, "add-checkpoint is a POST"));
  });

  it("stamps cosignatures with the clock in seconds when none is given", async () => {
    const handle = createWitness({ name: NAME, seed: WITNESS_SEED, logs: [CITY.vkey(ORIGIN)], statePath: statePath() });
    const before = Math.floor(Date.now() / 1000);
    const answer = await handle("POST", "/add-checkpoint", request(0, 5));
    const after = Math.floor(Date.now() / 1000);
    const stamps = [];
    for (let t = before; t <= after; t++) stamps.push(WITNESS.cosignLine(NAME, bodyOf(5), t));
    expect(stamps).toContain(answer.body);
  });

  it("serves the wire over HTTP under a prefix, query strings ignored, bodies over 64 KiB cut", async () => {
    const { handle } = witness();
    const server = await startWitnessServer(handle, 0, "/w");
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/w$/);
      const answer = await fetch(`${server.url}/add-checkpoint?x=1`, { method: "POST", body: request(0, 5) });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toBe("text/plain; charset=utf-8");
      expect(await answer.text()).toBe(ok(5).body);
      const size = await fetch(`${server.url}/add-checkpoint`, { method: "POST", body: request(0, 6) });
      expect([size.status, size.headers.get("content-type"), await size.text()]).toEqual([409, "text/x.tlog.size", "5\n"]);
      expect((await fetch(`${server.url}/add-checkpoint`)).status).toBe(405);
      const small = await fetch(`${server.url}/add-checkpoint`, { method: "POST", body: "x".repeat(64 * 1024) });
      expect(small.status).toBe(400);
      await expect(fetch(`${server.url}/add-checkpoint`, { method: "POST", body: "x".repeat(64 * 1024 + 1) }).then((r) => r.text())).rejects.toThrow();
    } finally {
      await server.close();
    }
    await expect(fetch(`${server.url}/add-checkpoint`)).rejects.toThrow();
  });

  it("serves without a prefix on the port asked", async () => {
    const { handle } = witness();
    const first = await startWitnessServer(handle);
    const port = Number(new URL(first.url).port);
    await first.close();
    const server = await startWitnessServer(handle, port);
    try {
      expect(server.url).toBe(`http://127.0.0.1:${port}`);
      expect((await fetch(`${server.url}/add-checkpoint`, { method: "POST", body: request(0, 5) })).status).toBe(200);
      expect((await fetch(`${server.url}/w/add-checkpoint`, { method: "POST", body: request(0, 5) })).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
