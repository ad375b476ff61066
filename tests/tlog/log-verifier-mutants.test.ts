import { describe, expect, it } from "vitest";
import { verifyReceipt, verifyTransparencyLog, type VerifierState } from "@/lib/tlog/verifying-client";
import { mth, refKey, refLeaf, refPath, refProof } from "../support/rfc9162-reference";

/**
 * The outside verifier (lib/tlog/verifying-client.ts) against a city served from memory, whose tiles,
 * checkpoint signature, cosignatures and proofs are built by the independent references
 * (tests/support/rfc9162-reference.ts: node:crypto), never by the code judged. 300 rows: one full
 * tile of 256 and a partial one of 44, so the tile width and the row numbers across tiles count.
 */
const ORIGIN = "city.example/log";
const CITY = refKey(new Uint8Array(32).fill(1));
const OTHER = refKey(new Uint8Array(32).fill(2));
const WITNESS = refKey(new Uint8Array(32).fill(3));
const VKEY = CITY.vkey(ORIGIN);
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

const rows = (n: number) => Array.from({ length: n }, (_, i) => new TextEncoder().encode(`row ${i + 1}${"x".repeat(i % 7)}`));

interface City {
  data: Uint8Array[];
  card?: unknown;
  note?: string;
  tiles?: Record<string, Uint8Array>;
  consistency?: (from: number, to: number) => string[];
}

function tilesOf(data: Uint8Array[], prefix: string): Record<string, Uint8Array> {
  const tiles: Record<string, Uint8Array> = {};
  for (let t = 0; t * 256 < data.length; t++) {
    const part = data.slice(t * 256, (t + 1) * 256);
    const name = `${String(t).padStart(3, "0")}${part.length === 256 ? "" : `.p/${part.length}`}`;
    tiles[`${prefix}tile/0/${name}`] = Buffer.concat(part.map(refLeaf));
    tiles[`${prefix}tile/entries/${name}`] = Buffer.concat(part.flatMap((d) => [Buffer.from([d.length >> 8, d.length & 0xff]), Buffer.from(d)]));
  }
  return tiles;
}

const bodyOf = (data: Uint8Array[], origin = ORIGIN) => `${origin}\n${data.length}\n${b64(mth(data))}\n`;
const noteOf = (data: Uint8Array[], extra = "") => `${bodyOf(data)}\n${CITY.signLine(ORIGIN, bodyOf(data))}${extra}`;

/** A fetch over an in-memory city; `asked` lists every URL requested. */
function serve(city: City, base = "https://city.example") {
  const asked: string[] = [];
  const files: Record<string, string | Uint8Array> = {
    [`${base}/city-card.json`]: JSON.stringify(city.card ?? { log: { verifier_key: VKEY, checkpoint: "/cp", tiles: "/t/" } }),
    [`${base}${(city.card as { log?: { checkpoint?: string } } | undefined)?.log?.checkpoint ?? "/cp"}`]: city.note ?? noteOf(city.data),
    ...(city.tiles ?? tilesOf(city.data, `${base}/t/`)),
  };
  const fetch = async (url: string) => {
    asked.push(url);
    const consistency = /\/api\/residency\/log\/consistency\?from=(\d+)&to=(\d+)$/.exec(url);
    if (consistency) {
      const proof = city.consistency ? city.consistency(Number(consistency[1]), Number(consistency[2])) : refProof(Number(consistency[1]), city.data).map(b64);
      return new Response(JSON.stringify({ proof }), { status: 200 });
    }
    const file = files[url];
    return file === undefined ? new Response("not found", { status: 404 }) : new Response(typeof file === "string" ? file : Buffer.from(file), { status: 200 });
  };
  return { fetch, asked };
}

describe("the outside verifier", () => {
  it("pins the key on first use, checks the signature and recomputes the root from every tile", async () => {
    const data = rows(300);
    const city = serve({ data });
    const report = await verifyTransparencyLog("https://city.example//", { fetch: city.fetch });
    expect(report).toEqual({
      ok: true,
      lines: [
        `pinned the key on first use: ${VKEY}`,
        `signature: valid (${ORIGIN}, size 300)`,
        "root: recomputed from 300 entries in the tiles, equal to the checkpoint's",
        "consistency: no earlier checkpoint kept for this key; this one is kept for next time",
      ],
      state: { vkey: VKEY, size: 300, root: b64(mth(data)) },
    });
    expect(city.asked).toEqual([
      "https://city.example/city-card.json",
      "https://city.example/cp",
      "https://city.example/t/tile/0/000",
      "https://city.example/t/tile/entries/000",
      "https://city.example/t/tile/0/001.p/44",
      "https://city.example/t/tile/entries/001.p/44",
    ]);
  });

  it("verifies an empty log and a log of exactly one full tile", async () => {
    expect((await verifyTransparencyLog("https://city.example", { fetch: serve({ data: [] }).fetch })).lines[2]).toBe(
      "root: recomputed from 0 entries in the tiles, equal to the checkpoint's",
    );
    const full = serve({ data: rows(256) });
    expect((await verifyTransparencyLog("https://city.example", { fetch: full.fetch })).ok).toBe(true);
    expect(full.asked.slice(2)).toEqual(["https://city.example/t/tile/0/000", "https://city.example/t/tile/entries/000"]);
  });

  it("takes the default paths when the card names none", async () => {
    const data = rows(3);
    const base = "https://city.example";
    const city = serve({ data, card: { log: { verifier_key: VKEY } }, tiles: tilesOf(data, `${base}/api/residency/log/`) });
    // The card names no checkpoint path: serve() put the note at /cp; add the default one.
    const fetch = async (url: string) => (url === `${base}/api/residency/log/checkpoint` ? new Response(noteOf(data)) : city.fetch(url));
    expect((await verifyTransparencyLog(base, { fetch })).ok).toBe(true);
  });

  it("takes the default paths when the card has no log at all and the key is given", async () => {
    const data = rows(3);
    const base = "https://city.example";
    const city = serve({ data, card: {}, tiles: tilesOf(data, `${base}/api/residency/log/`) });
    const fetch = async (url: string) => (url === `${base}/api/residency/log/checkpoint` ? new Response(noteOf(data)) : city.fetch(url));
    expect((await verifyTransparencyLog(base, { fetch, vkey: VKEY })).ok).toBe(true);
  });

  it("reads an empty entry at the very end of a bundle", async () => {
    const data = [...rows(3), new Uint8Array(0)];
    expect((await verifyTransparencyLog("https://city.example", { fetch: serve({ data }).fetch })).lines.at(-2)).toBe(
      "root: recomputed from 4 entries in the tiles, equal to the checkpoint's",
    );
  });

  it("says which witnesses cosigned the checkpoint", async () => {
    const data = rows(5);
    const w1 = WITNESS.vkey("w1.example", 4);
    const w2 = OTHER.vkey("w2.example", 4);
    const card = {
      log: {
        verifier_key: VKEY,
        checkpoint: "/cp",
        tiles: "/t/",
        witnesses: [
          { name: "w1.example", vkey: w1 },
          { name: "w2.example", vkey: w2 },
        ],
      },
    };
    const note = noteOf(data, WITNESS.cosignLine("w1.example", bodyOf(data), 1700000000));
    const report = await verifyTransparencyLog("https://city.example", { fetch: serve({ data, card, note }).fetch });
    expect(report.lines.slice(2, 4)).toEqual(["witness w1.example: cosigned this checkpoint", "witness w2.example: no valid cosignature on this checkpoint"]);
  });

  it("checks consistency with the checkpoint it kept, and refuses a fork or a shrunk log", async () => {
    const data = rows(300);
    const kept: VerifierState = { vkey: VKEY, size: 100, root: b64(mth(data.slice(0, 100))) };
    const city = serve({ data });
    const report = await verifyTransparencyLog("https://city.example", { fetch: city.fetch, state: kept });
    expect(report.ok).toBe(true);
    expect(report.lines).toEqual([
      `signature: valid (${ORIGIN}, size 300)`,
      "root: recomputed from 300 entries in the tiles, equal to the checkpoint's",
      "consistency: size 300 extends the size 100 seen last time",
    ]);
    expect(city.asked).toContain("https://city.example/api/residency/log/consistency?from=100&to=300");

    const forked = { ...kept, root: b64(mth(rows(101).slice(1))) };
    const fork = await verifyTransparencyLog("https://city.example", { fetch: serve({ data }).fetch, state: forked });
    expect(fork).toEqual({
      ok: false,
      lines: [
        ...report.lines.slice(0, 2),
        "REFUSED: the checkpoint of size 300 is not an extension of the one seen at size 100: the history was rewritten (a fork)",
      ],
      state: forked,
    });

    const bigger = { ...kept, size: 301 };
    const shrunk = await verifyTransparencyLog("https://city.example", { fetch: serve({ data }).fetch, state: bigger });
    expect(shrunk.lines.at(-1)).toBe("REFUSED: the log shrank: it was 301 rows when last verified, now 300 (a fork)");
    expect(shrunk.state).toBe(bigger);

    // The same size as kept: an empty proof, the same root.
    const same = await verifyTransparencyLog("https://city.example", { fetch: serve({ data }).fetch, state: { vkey: VKEY, size: 300, root: b64(mth(data)) } });
    expect(same.lines.at(-1)).toBe("consistency: size 300 extends the size 300 seen last time");
  });

  it("ignores a kept checkpoint of another key", async () => {
    const data = rows(4);
    const report = await verifyTransparencyLog("https://city.example", {
      fetch: serve({ data }).fetch,
      vkey: VKEY,
      state: { vkey: OTHER.vkey(ORIGIN), size: 9, root: b64(mth(data)) },
    });
    expect(report.ok).toBe(true);
    expect(report.lines.at(-1)).toBe("consistency: no earlier checkpoint kept for this key; this one is kept for next time");
  });

  it("warns when the card publishes another key than the one given or pinned, and verifies against that one", async () => {
    const data = rows(4);
    const card = { log: { verifier_key: OTHER.vkey(ORIGIN), checkpoint: "/cp", tiles: "/t/" } };
    const given = await verifyTransparencyLog("https://city.example", { fetch: serve({ data, card }).fetch, vkey: VKEY });
    expect(given.ok).toBe(true);
    expect(given.lines[0]).toBe(`warning: the card now publishes another key (${OTHER.vkey(ORIGIN)}); verifying against the key given`);
    const pinned = await verifyTransparencyLog("https://city.example", {
      fetch: serve({ data, card }).fetch,
      state: { vkey: VKEY, size: 4, root: b64(mth(data)) },
    });
    expect(pinned.lines[0]).toBe(`warning: the card now publishes another key (${OTHER.vkey(ORIGIN)}); verifying against the pinned key`);
    expect(pinned.state).toEqual({ vkey: VKEY, size: 4, root: b64(mth(data)) });
    const quiet = await verifyTransparencyLog("https://city.example", { fetch: serve({ data }).fetch, vkey: VKEY });
    expect(quiet.lines[0]).toBe(`signature: valid (${ORIGIN}, size 4)`);
    const none = await verifyTransparencyLog("https://city.example", {
      fetch: serve({ data, card: { log: { checkpoint: "/cp", tiles: "/t/" } } }).fetch,
      vkey: VKEY,
    });
    expect(none.lines[0]).toBe(`signature: valid (${ORIGIN}, size 4)`);
  });

  it("refuses without a key, with a wrong key, and a checkpoint whose origin is not the key's name", async () => {
    const data = rows(4);
    const none = await verifyTransparencyLog("https://city.example", { fetch: serve({ data, card: {} }).fetch });
    expect(none).toEqual({ ok: false, lines: ["REFUSED: the city card publishes no log.verifier_key"], state: null });
    const wrong = await verifyTransparencyLog("https://city.example", { fetch: serve({ data }).fetch, vkey: OTHER.vkey(ORIGIN) });
    expect(wrong.lines).toEqual([
      `warning: the card now publishes another key (${VKEY}); verifying against the key given`,
      `REFUSED: the checkpoint's signature does not verify against ${ORIGIN}'s key: a wrong key, or not the city's checkpoint`,
    ]);
    const body = bodyOf(data, "elsewhere.example");
    const elsewhere = await verifyTransparencyLog("https://city.example", { fetch: serve({ data, note: `${body}\n${CITY.signLine(ORIGIN, body)}` }).fetch });
    expect(elsewhere.lines.at(-1)).toBe(`REFUSED: the checkpoint's origin elsewhere.example is not the key's name ${ORIGIN}`);
  });

  it("names a changed row by its number, in any tile", async () => {
    const data = rows(300);
    const changed = [...data];
    changed[257] = new TextEncoder().encode("row 258, changed");
    const tiles = tilesOf(changed, "https://city.example/t/");
    // The hash tile is the original one: only the entry changed.
    tiles["https://city.example/t/tile/0/001.p/44"] = tilesOf(data, "https://city.example/t/")["https://city.example/t/tile/0/001.p/44"]!;
    const report = await verifyTransparencyLog("https://city.example", { fetch: serve({ data, tiles }).fetch });
    expect(report.lines.at(-1)).toBe("REFUSED: log row 258 as published does not hash to its leaf in the tree: the row was changed after it was logged");
  });

  it("refuses tiles that do not hash to the root, are short, or whose bundles end early or run on", async () => {
    const data = rows(5);
    const prefix = "https://city.example/t/";
    const refusal = async (tiles: Record<string, Uint8Array>, note?: string) =>
      (await verifyTransparencyLog("https://city.example", { fetch: serve({ data, tiles, note }).fetch })).lines.at(-1);
    const good = tilesOf(data, prefix);
    const fewer = tilesOf(data.slice(0, 4), prefix);
    expect(
      await refusal(
        good,
        noteOf(
          rows(6)
            .slice(0, 5)
            .map((d, i) => (i === 4 ? new TextEncoder().encode("other") : d)),
        ),
      ),
    ).toBe("REFUSED: the tiles do not hash to the checkpoint's root");
    expect(await refusal({ ...good, [`${prefix}tile/0/000.p/5`]: good[`${prefix}tile/0/000.p/5`]!.slice(0, 4 * 32) })).toBe(
      "REFUSED: tile 0/000.p/5 has 128 bytes, not 160",
    );
    expect(await refusal({ ...good, [`${prefix}tile/0/000.p/5`]: Uint8Array.of(...good[`${prefix}tile/0/000.p/5`]!, 0) })).toBe(
      "REFUSED: tile 0/000.p/5 has 161 bytes, not 160",
    );
    expect(await refusal({ ...good, [`${prefix}tile/entries/000.p/5`]: fewer[`${prefix}tile/entries/000.p/4`]! })).toBe(
      "REFUSED: entry bundle 000.p/5 ends before entry 4",
    );
    // One byte of a length left: still not a whole length.
    expect(await refusal({ ...good, [`${prefix}tile/entries/000.p/5`]: Uint8Array.of(...fewer[`${prefix}tile/entries/000.p/4`]!, 0) })).toBe(
      "REFUSED: entry bundle 000.p/5 ends before entry 4",
    );
    expect(await refusal({ ...good, [`${prefix}tile/entries/000.p/5`]: Uint8Array.of(...good[`${prefix}tile/entries/000.p/5`]!, 0) })).toBe(
      "REFUSED: entry bundle 000.p/5 has bytes after its 5 entries",
    );
    // An entry whose length is one short is a changed row.
    const last = good[`${prefix}tile/entries/000.p/5`]!;
    const longer = Uint8Array.from(last);
    longer[last.length - data[4]!.length - 1] = longer[last.length - data[4]!.length - 1]! - 1;
    expect(await refusal({ ...good, [`${prefix}tile/entries/000.p/5`]: longer })).toBe(
      "REFUSED: log row 5 as published does not hash to its leaf in the tree: the row was changed after it was logged",
    );
  });

  it("refuses an answer that is not 200, and says what failed when the fetch itself throws", async () => {
    const data = rows(3);
    const missing = await verifyTransparencyLog("https://city.example", { fetch: serve({ data, tiles: {} }).fetch });
    expect(missing.lines.at(-1)).toBe("REFUSED: GET https://city.example/t/tile/0/000.p/3 answered 404");
    const thrown = await verifyTransparencyLog("https://city.example", {
      fetch: async () => {
        throw "offline";
      },
    });
    expect(thrown).toEqual({ ok: false, lines: ["REFUSED: offline"], state: null });
    const created = await verifyTransparencyLog("https://city.example", { fetch: async () => new Response("{}", { status: 201 }) });
    expect(created.lines).toEqual(["REFUSED: GET https://city.example/city-card.json answered 201"]);
  });
});

describe("a receipt checked offline (verifyReceipt)", () => {
  // Receipts built by the references: the tree of `size` rows, its note signed by CITY, RFC 9162's PATH.
  const data = rows(13);
  const receiptOf = (seq: number, size: number) => ({
    seq,
    leaf_index: seq - 1,
    tree_size: size,
    proof: refPath(seq - 1, data, size).map(b64),
    checkpoint: noteOf(data.slice(0, size)),
  });

  it("accepts every row's receipt in every tree that holds it", () => {
    for (let size = 1; size <= data.length; size++) {
      for (let seq = 1; seq <= size; seq++) {
        const report = verifyReceipt(receiptOf(seq, size), data[seq - 1]!, VKEY);
        expect(report, `${seq} in ${size}`).toEqual({ ok: true, reason: `entry ${seq} is leaf ${seq - 1} of the tree of ${size} signed by ${ORIGIN}` });
      }
    }
  });

  it("refuses another entry's data, another index, another size, a changed proof, another key and a broken note", () => {
    const good = receiptOf(6, 13);
    const refused = (receipt: typeof good, leaf = data[5]!, vkey = VKEY) => verifyReceipt(receipt, leaf, vkey);
    expect(refused(good, data[6]!).reason).toMatch(/does not put this entry at leaf 5/);
    expect(refused({ ...good, seq: 7, leaf_index: 6 }).ok).toBe(false);
    expect(refused({ ...good, leaf_index: 4 }).reason).toBe("entry 6 is leaf 5, not 4");
    expect(refused({ ...good, tree_size: 12 }).reason).toBe("the checkpoint covers 13 entries, the receipt says 12");
    expect(refused({ ...good, proof: good.proof.slice(1) }).ok).toBe(false);
    expect(refused({ ...good, proof: [...good.proof].reverse() }).ok).toBe(false);
    expect(refused(good, data[5]!, OTHER.vkey(ORIGIN)).reason).toMatch(/does not verify/);
    expect(
      refused({ ...good, checkpoint: `${bodyOf(data, "elsewhere.example/log")}\n${CITY.signLine(ORIGIN, bodyOf(data, "elsewhere.example/log"))}` }).reason,
    ).toMatch(/origin elsewhere.example\/log is not the key's name/);
    expect(refused({ ...good, checkpoint: "not a note" }).reason).toMatch(/^the receipt does not parse/);
  });
});
