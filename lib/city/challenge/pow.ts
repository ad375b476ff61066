import { createHash } from "node:crypto";

/*
 * CITY-POW/1, the gate's client puzzle (docs/pow.md gives it byte for byte, with a test vector):
 *
 *   challenge = SHA-256( "CITY-POW/1" 0x00 nonce 0x00 name 0x00 origin )      (UTF-8 text, 0x00 between)
 *   work      = SHA-256( challenge || solution )                               (32 + 8 bytes: one block)
 *
 * `nonce` is the gate nonce's 32 lowercase hex characters, `name` and `origin` the presentation's as
 * the city reads them (trimmed), `solution` 8 bytes sent as 16 lowercase hex (pow_solution). The
 * solution's effort is the number of leading zero bits of `work` (most significant bit of byte 0
 * first). A nonce is spent by the POST that carries it, so one solution buys one presentation; the
 * nonce is made by the city (MAC'd, 600 s), so no work can be done before it is issued; name and
 * origin are bound so that a solution seen in transit buys nothing for another presentation (the
 * gate filters U+0000 in both, so the fields split one way only). Verifying is two hashes of a
 * few blocks, with no state but the spent nonce that the gate records anyway. node:crypto (OpenSSL)
 * hashes, not @noble/hashes: a verification costs a few microseconds of CPU instead of tens to over a
 * hundred for a long name and origin (measured: docs/pow.md), and an honest solver goes ~5x faster.
 */

export const POW_PROTOCOL = "CITY-POW/1" as const;
/** The header every gate answer that publishes the suggested effort carries it in (as its field suggested_effort). */
export const POW_EFFORT_HEADER = "City-Pow-Effort" as const;
/** A solution: 8 bytes as 16 lowercase hex characters. */
export const POW_SOLUTION_FORMAT = /^[0-9a-f]{16}$/;
const SOLUTION_BYTES = 8;

/** What a solution is bound to: the gate nonce and the presentation's name and origin. */
export interface PowBinding {
  nonce: string;
  name: string;
  origin: string;
}

/** The challenge a solution is searched for: SHA-256 of the domain string, the nonce, the name and the origin. */
export function powChallenge(binding: PowBinding): Uint8Array {
  const text = [POW_PROTOCOL, binding.nonce, binding.name.trim(), binding.origin.trim()].join("\u0000");
  return sha256(Buffer.from(text, "utf8"));
}

/** The work hash of one candidate: SHA-256(challenge || solution's 8 bytes). */
export function powWork(challenge: Uint8Array, solution: Uint8Array): Uint8Array {
  const message = new Uint8Array(challenge.length + SOLUTION_BYTES);
  message.set(challenge);
  message.set(solution, challenge.length);
  return sha256(message);
}

/** The number of leading zero bits of a hash (0 to 256). */
export function leadingZeroBits(hash: Uint8Array): number {
  let bits = 0;
  for (const byte of hash) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/** The effort a sent solution proves for a presentation: its work hash's leading zero bits; 0 when none or malformed. */
export function solutionEffort(binding: PowBinding, solution: string | undefined): number {
  if (solution === undefined || !POW_SOLUTION_FORMAT.test(solution)) return 0;
  return leadingZeroBits(powWork(powChallenge(binding), Buffer.from(solution, "hex")));
}

/**
 * Searches a solution of at least `effort` bits, counting up from `start`: what an honest client
 * does (2^effort work hashes expected). Gives up after `maxTries` (null then).
 */
export function solvePow(binding: PowBinding, effort: number, start = 0, maxTries = 2 ** 40): { solution: string; tries: number } | null {
  const challenge = powChallenge(binding);
  const message = new Uint8Array(challenge.length + SOLUTION_BYTES);
  message.set(challenge);
  const view = new DataView(message.buffer, challenge.length);
  for (let i = 0; i < maxTries; i++) {
    const n = start + i;
    view.setUint32(0, Math.floor(n / 2 ** 32));
    view.setUint32(4, n >>> 0);
    if (leadingZeroBits(sha256(message)) >= effort) {
      return { solution: Buffer.from(message.subarray(challenge.length)).toString("hex"), tries: i + 1 };
    }
  }
  return null;
}

function sha256(bytes: Uint8Array): Uint8Array {
  return createHash("sha256").update(bytes).digest();
}
