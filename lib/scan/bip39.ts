import { sha256 } from "@noble/hashes/sha2.js";
import { wordlist } from "@scure/bip39/wordlists/english.js";

/**
 * Finds a checksum-valid English BIP-39 mnemonic anywhere in a text.
 *
 * The text is read as a sequence of words (case and punctuation ignored). Every window of 12, 15,
 * 18, 21 or 24 consecutive wordlist words is checked against its BIP-39 checksum. Bare numbers are
 * skipped rather than breaking a run, so a phrase written down as "1. word 2. word ..." is found.
 * Each word ends at most five windows, so the cost is linear in the size of the text.
 *
 * Ordinary prose almost never holds 12 wordlist words in a row (4 MB of English documentation had
 * two such runs, of 12 and 14 words), so checksum checks are rare. A text with thousands of
 * wordlist words in a row ("secret secret secret ...") would cost a hash per window; past
 * MAX_CHECKS the scan throws, and the scanner refuses the content as `scanner_failed`.
 */

const WORD_INDEX: ReadonlyMap<string, number> = new Map(wordlist.map((word, index) => [word, index]));

export const MNEMONIC_LENGTHS = [12, 15, 18, 21, 24] as const;
export const MAX_CHECKS = 5_000;

export class ScanBudgetExceeded extends Error {
  override name = "ScanBudgetExceeded";
}

export function containsMnemonic(text: string): boolean {
  const run: number[] = [];
  let checks = 0;
  for (const match of text.toLowerCase().matchAll(/[a-z]+|[0-9]+/g)) {
    const token = match[0];
    if (token.charCodeAt(0) <= 0x39) continue; // a bare number: list numbering, not a break
    const index = WORD_INDEX.get(token);
    if (index === undefined) {
      run.length = 0;
      continue;
    }
    run.push(index);
    for (const length of MNEMONIC_LENGTHS) {
      if (length > run.length) break;
      if (++checks > MAX_CHECKS) throw new ScanBudgetExceeded("too many wordlist words in a row to check");
      if (checksumValid(run, run.length - length, length)) return true;
    }
  }
  return false;
}

/**
 * Whether `length` word indices starting at `start` form a valid BIP-39 mnemonic: the first
 * length*11*32/33 bits are the entropy, the remaining length*11/33 bits must equal the first bits
 * of sha256(entropy). Works on indices so that no string is rebuilt per window.
 */
export function checksumValid(indices: readonly number[], start: number, length: number): boolean {
  const entropyBits = (length * 11 * 32) / 33;
  const checksumBits = entropyBits / 32;
  const entropyBytes = entropyBits / 8;
  const bytes = new Uint8Array(entropyBytes + 1);
  let acc = 0;
  let accBits = 0;
  let written = 0;
  for (let i = start; i < start + length; i++) {
    acc = (acc << 11) | (indices[i] ?? 0);
    accBits += 11;
    while (accBits >= 8) {
      accBits -= 8;
      bytes[written++] = (acc >>> accBits) & 0xff;
      acc &= (1 << accBits) - 1;
    }
  }
  // 24 words end on a byte boundary (the checksum is the 33rd byte); shorter ones leave the
  // checksum bits in the accumulator.
  const checksum = accBits === 0 ? (bytes[entropyBytes] ?? 0) : acc;
  const digest = sha256(bytes.subarray(0, entropyBytes));
  return (digest[0] ?? 0) >>> (8 - checksumBits) === checksum;
}
