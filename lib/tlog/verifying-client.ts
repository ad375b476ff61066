import { hasValidSignature, parseCheckpointBody, parseNote, parseVkey, unb64, validCosignatures } from "./note";
import { encodeTileIndex, TILE_WIDTH } from "./tiles";
import { equalHashes, type Hash, leafHash, rootOfLeaves, verifyConsistency, verifyInclusion } from "./tree";

/**
 * An outside verifier of one of the city's logs (the card's `log`, the residency log, by default;
 * `identity_log`, the identity log), from its public key alone: the checkpoint's
 * signature, the root recomputed from the tiles (every entry hashed against its leaf), and
 * consistency with the checkpoint it saw last time. Used by `npm run verify-log` and the tests.
 */
export interface VerifierState {
  vkey: string;
  size: number;
  root: string;
}

export interface VerifyReport {
  ok: boolean;
  lines: string[];
  state: VerifierState | null;
}

type Fetch = (url: string) => Promise<Response>;

/** A GET that gives up after 30 s, so a city that stops answering cannot hang a verifier (every outside fetch of a log). */
export const timedFetch: Fetch = (url) => fetch(url, { signal: AbortSignal.timeout(30_000) });

/** Where each log's doors are (docs/log.md): the consistency proof, and the checkpoint and tiles a card does not name. */
const LOG_DOORS = { log: "/api/residency/log", identity_log: "/api/identity/log" } as const;

class Refused extends Error {}

async function get(fetcher: Fetch, url: string): Promise<Response> {
  const response = await fetcher(url);
  if (response.status !== 200) throw new Refused(`GET ${url} answered ${response.status}`);
  return response;
}

/** A checkpoint note signed by `vkey` under its own name as origin (the city's rule), parsed; Refused otherwise. */
function signedCheckpoint(text: string, vkey: string) {
  const verifier = parseVkey(vkey);
  const note = parseNote(text);
  if (!hasValidSignature(note, verifier))
    throw new Refused(`the checkpoint's signature does not verify against ${verifier.name}'s key: a wrong key, or not the city's checkpoint`);
  const checkpoint = parseCheckpointBody(note.body);
  if (checkpoint.origin !== verifier.name) throw new Refused(`the checkpoint's origin ${checkpoint.origin} is not the key's name ${verifier.name}`);
  return { note, checkpoint };
}

/** A log receipt as an answer carries it (`log_receipt`): the entry's inclusion proof in a signed checkpoint. */
export interface ReceiptToVerify {
  seq: number;
  leaf_index: number;
  tree_size: number;
  proof: string[];
  checkpoint: string;
}

/**
 * Checks a log receipt offline, from the log's verifier key alone: its checkpoint is signed by that
 * key under the key's name as origin and covers the receipt's tree, and its proof puts the entry's
 * leaf data at its index in that tree (RFC 9162 2.1.3.2). Used by `npm run verify-log -- --receipt`.
 */
export function verifyReceipt(receipt: ReceiptToVerify, leafData: Uint8Array, vkey: string): { ok: boolean; reason: string } {
  try {
    const { checkpoint } = signedCheckpoint(receipt.checkpoint, vkey);
    if (checkpoint.size !== receipt.tree_size) throw new Refused(`the checkpoint covers ${checkpoint.size} entries, the receipt says ${receipt.tree_size}`);
    if (receipt.leaf_index !== receipt.seq - 1) throw new Refused(`entry ${receipt.seq} is leaf ${receipt.seq - 1}, not ${receipt.leaf_index}`);
    if (!verifyInclusion(leafHash(leafData), receipt.leaf_index, receipt.tree_size, receipt.proof.map(unb64), checkpoint.root)) {
      throw new Refused(`the proof does not put this entry at leaf ${receipt.leaf_index} of the signed tree of ${receipt.tree_size}`);
    }
    return { ok: true, reason: `entry ${receipt.seq} is leaf ${receipt.leaf_index} of the tree of ${checkpoint.size} signed by ${checkpoint.origin}` };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, reason: err.message };
    return { ok: false, reason: `the receipt does not parse: ${err instanceof Error ? err.message : String(err)}` };
  }
}

export async function verifyTransparencyLog(
  baseUrl: string,
  options: {
    vkey?: string;
    state?: VerifierState | null;
    fetch?: Fetch;
    log?: "log" | "identity_log";
    /** Given each entry as its leaf is checked (0-based index, its data): proven only when the report is ok. */
    onEntry?: (index: number, data: Uint8Array) => void;
  },
): Promise<VerifyReport> {
  const field = options.log ?? "log";
  const fetcher: Fetch = options.fetch ?? timedFetch;
  const base = baseUrl.replace(/\/+$/, "");
  const lines: string[] = [];
  try {
    const card = (await (await get(fetcher, `${base}/city-card.json`)).json()) as Record<
      string,
      { verifier_key?: string; checkpoint?: string; tiles?: string; witnesses?: Array<{ name: string; vkey: string }> } | undefined
    >;
    const published = card[field]?.verifier_key;
    const doors = LOG_DOORS[field];
    const tiles = card[field]?.tiles ?? `${doors}/`;
    let vkey = options.vkey ?? options.state?.vkey;
    if (!vkey) {
      if (!published) throw new Refused(`the city card publishes no ${field}.verifier_key`);
      vkey = published;
      lines.push(`pinned the key on first use: ${vkey}`);
    } else if (published && published !== vkey) {
      lines.push(`warning: the card now publishes another key (${published}); verifying against ${options.vkey ? "the key given" : "the pinned key"}`);
    }
    const { note, checkpoint } = signedCheckpoint(await (await get(fetcher, `${base}${card[field]?.checkpoint ?? `${doors}/checkpoint`}`)).text(), vkey);
    lines.push(`signature: valid (${checkpoint.origin}, size ${checkpoint.size})`);

    for (const witness of card[field]?.witnesses ?? []) {
      const valid = validCosignatures(note, parseVkey(witness.vkey));
      lines.push(`witness ${witness.name}: ${valid.length > 0 ? "cosigned this checkpoint" : "no valid cosignature on this checkpoint"}`);
    }

    const leaves = await leavesFromTiles(fetcher, `${base}${tiles}`, checkpoint.size, options.onEntry);
    if (!equalHashes(rootOfLeaves(leaves), checkpoint.root)) throw new Refused("the tiles do not hash to the checkpoint's root");
    lines.push(`root: recomputed from ${leaves.length} entries in the tiles, equal to the checkpoint's`);

    const previous = options.state && options.state.vkey === vkey ? options.state : null;
    if (previous) {
      const oldRoot = unb64(previous.root);
      if (previous.size > checkpoint.size)
        throw new Refused(`the log shrank: it was ${previous.size} rows when last verified, now ${checkpoint.size} (a fork)`);
      const answer = (await (await get(fetcher, `${base}${doors}/consistency?from=${previous.size}&to=${checkpoint.size}`)).json()) as {
        proof: string[];
      };
      if (!verifyConsistency(previous.size, checkpoint.size, answer.proof.map(unb64), oldRoot, checkpoint.root)) {
        throw new Refused(
          `the checkpoint of size ${checkpoint.size} is not an extension of the one seen at size ${previous.size}: the history was rewritten (a fork)`,
        );
      }
      lines.push(`consistency: size ${checkpoint.size} extends the size ${previous.size} seen last time`);
    } else {
      lines.push("consistency: no earlier checkpoint kept for this key; this one is kept for next time");
    }
    return { ok: true, lines, state: { vkey, size: checkpoint.size, root: Buffer.from(checkpoint.root).toString("base64") } };
  } catch (err) {
    lines.push(`REFUSED: ${err instanceof Error ? err.message : String(err)}`);
    return { ok: false, lines, state: options.state ?? null };
  }
}

/** Every leaf hash of the tree of `size`, from the level-0 hash tiles, each checked against its entry in the entry bundles. */
async function leavesFromTiles(fetcher: Fetch, prefix: string, size: number, onEntry?: (index: number, data: Uint8Array) => void): Promise<Hash[]> {
  const leaves: Hash[] = [];
  for (let index = 0; index * TILE_WIDTH < size; index++) {
    const width = Math.min(TILE_WIDTH, size - index * TILE_WIDTH);
    const suffix = `${encodeTileIndex(index)}${width === TILE_WIDTH ? "" : `.p/${width}`}`;
    const tile = new Uint8Array(await (await get(fetcher, `${prefix}tile/0/${suffix}`)).arrayBuffer());
    const bundle = Buffer.from(await (await get(fetcher, `${prefix}tile/entries/${suffix}`)).arrayBuffer());
    if (tile.length !== width * 32) throw new Refused(`tile 0/${suffix} has ${tile.length} bytes, not ${width * 32}`);
    let at = 0;
    for (let i = 0; i < width; i++) {
      if (at + 2 > bundle.length) throw new Refused(`entry bundle ${suffix} ends before entry ${i}`);
      const length = bundle.readUInt16BE(at);
      const data = bundle.subarray(at + 2, at + 2 + length);
      at += 2 + length;
      const leaf = tile.slice(i * 32, (i + 1) * 32);
      if (!equalHashes(leafHash(data), leaf)) {
        throw new Refused(`log row ${index * TILE_WIDTH + i + 1} as published does not hash to its leaf in the tree: the row was changed after it was logged`);
      }
      leaves.push(leaf);
      onEntry?.(index * TILE_WIDTH + i, data);
    }
    if (at !== bundle.length) throw new Refused(`entry bundle ${suffix} has bytes after its ${width} entries`);
  }
  return leaves;
}
