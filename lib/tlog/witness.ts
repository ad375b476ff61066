import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as ed from "@noble/ed25519";
import { b64, COSIGNATURE, cosign, hasValidSignature, parseCheckpointBody, parseNote, parseVkey, unb64, type Verifier, vkeyOf } from "./note";
import { equalHashes, verifyConsistency } from "./tree";

/**
 * A reference C2SP tlog-witness: anyone can run it (`npm run witness`) to witness the city. It
 * keeps, per log origin, the latest checkpoint it cosigned (a JSON file, replaced atomically),
 * cosigns a new checkpoint only when it is signed by the log's key and consistent with that one,
 * and says why when it refuses.
 */
export interface WitnessOptions {
  name: string;
  seed: Uint8Array;
  /** The logs it witnesses: their C2SP vkeys (type 0x01, name = origin). */
  logs: string[];
  statePath: string;
  now?: () => number;
}

export interface WitnessAnswer {
  status: number;
  contentType: string;
  body: string;
}

type State = Record<string, { size: number; root: string }>;

export function witnessVkey(name: string, seed: Uint8Array): string {
  return vkeyOf(name, ed.getPublicKey(seed), COSIGNATURE);
}

export function createWitness(options: WitnessOptions): (method: string, path: string, body: string) => Promise<WitnessAnswer> {
  const logs = new Map<string, Verifier>(options.logs.map((v) => parseVkey(v)).map((v) => [v.name, v]));
  const now = options.now ?? (() => Date.now());
  let queue: Promise<unknown> = Promise.resolve();
  const readState = (): State => (existsSync(options.statePath) ? (JSON.parse(readFileSync(options.statePath, "utf8")) as State) : {});
  const writeState = (state: State) => {
    writeFileSync(`${options.statePath}.tmp`, JSON.stringify(state));
    renameSync(`${options.statePath}.tmp`, options.statePath);
  };
  const text = (status: number, body: string, contentType = "text/plain; charset=utf-8"): WitnessAnswer => ({
    status,
    contentType,
    body: body.endsWith("\n") ? body : `${body}\n`,
  });

  const addCheckpoint = (request: string): WitnessAnswer => {
    const split = request.indexOf("\n\n");
    if (split < 0) return text(400, "the body is an old size line, proof lines, an empty line, then the checkpoint");
    const [oldLine, ...proofLines] = request.slice(0, split).split("\n");
    const oldMatch = /^old (0|[1-9][0-9]*)$/.exec(oldLine ?? "");
    if (!oldMatch) return text(400, "the first line is 'old <size>'");
    if (proofLines.length > 63) return text(400, "more than 63 consistency proof lines");
    let proof: Uint8Array[];
    let note: ReturnType<typeof parseNote>;
    let checkpoint: ReturnType<typeof parseCheckpointBody>;
    try {
      proof = proofLines.map((line) => {
        const hash = unb64(line);
        if (hash.length !== 32 || b64(hash) !== line) throw new Error("a proof line is one base64 hash");
        return hash;
      });
      note = parseNote(request.slice(split + 2));
      checkpoint = parseCheckpointBody(note.body);
    } catch (err) {
      return text(400, err instanceof Error ? err.message : "malformed request");
    }
    const log = logs.get(checkpoint.origin);
    if (!log) return text(404, `unknown log origin ${checkpoint.origin}`);
    if (!hasValidSignature(note, log)) return text(403, `the checkpoint carries no valid signature by ${log.name}'s key: refused`);
    const old = Number(oldMatch[1]);
    if (old > checkpoint.size) return text(400, `old size ${old} is larger than the checkpoint's size ${checkpoint.size}`);
    const state = readState();
    const held = state[checkpoint.origin] ?? { size: 0, root: "" };
    if (old !== held.size) return text(409, `${held.size}\n`, "text/x.tlog.size");
    if (old === 0 && proof.length > 0) return text(400, "the consistency proof must be empty when the old size is 0");
    if (held.size > 0) {
      const heldRoot = unb64(held.root);
      if (old === checkpoint.size && !equalHashes(heldRoot, checkpoint.root)) {
        return text(409, `fork: size ${old} was cosigned with root ${held.root}, this checkpoint has root ${b64(checkpoint.root)} for the same size; refused`);
      }
      if (old < checkpoint.size && !verifyConsistency(old, checkpoint.size, proof, heldRoot, checkpoint.root)) {
        return text(
          422,
          `fork: the checkpoint of size ${checkpoint.size} is not consistent with the one cosigned at size ${old} (root ${held.root}); the log's history was rewritten; refused`,
        );
      }
    }
    state[checkpoint.origin] = { size: checkpoint.size, root: b64(checkpoint.root) };
    writeState(state);
    return text(200, cosign(note.body, options.name, options.seed, Math.floor(now() / 1000)));
  };

  return async (method, path, body) => {
    if (path !== "/add-checkpoint") return text(404, "this witness serves POST /add-checkpoint");
    if (method !== "POST") return text(405, "add-checkpoint is a POST");
    // Checking the old size and keeping the new checkpoint happen as one step (the spec's race).
    const run = queue.then(() => addCheckpoint(body));
    queue = run.catch(() => undefined);
    return run;
  };
}

/** Serves a witness over HTTP (the tlog-witness wire format) on 127.0.0.1:`port` (0: any free port). */
export async function startWitnessServer(
  handle: ReturnType<typeof createWitness>,
  port = 0,
  prefix = "",
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > 64 * 1024) req.destroy();
      else chunks.push(chunk);
    });
    req.on("end", async () => {
      const path = (req.url ?? "/").split("?")[0]!.slice(prefix.length);
      const answer = await handle(req.method ?? "GET", path, Buffer.concat(chunks).toString("utf8"));
      res.writeHead(answer.status, { "Content-Type": answer.contentType });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const { port: bound } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${bound}${prefix}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
