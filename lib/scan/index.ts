import { CityError } from "@/lib/errors";
import { RULES, type ScanRule } from "./rules";

export { RULES, type ScanRule } from "./rules";

export type ScanVerdict = { ok: true } | { ok: false; rule: string; reason: string };

/** The refusal given when the scanner itself fails: fail closed, never fail open. */
export const SCANNER_FAILED = {
  rule: "scanner_failed",
  reason: "The content scanner could not finish, so the content is refused (fail-closed).",
} as const;

// Zero-width and soft-hyphen characters a secret could be split with to slip past a pattern.
const INVISIBLE = /[\u00AD\u180E\u200B-\u200D\u2060\uFEFF]/g;

/**
 * Runs a rules table over a text. Any exception (a detector that throws, a text that is not a
 * string) becomes the `scanner_failed` refusal. Exported with the table as a parameter so that a
 * test can prove the fail-closed path with a detector that throws.
 */
export function scanWith(rules: readonly ScanRule[], text: string): ScanVerdict {
  try {
    // NFKC folds full-width and compatibility letters to ASCII; secrets themselves are ASCII.
    const normal = text.normalize("NFKC");
    const visible = normal.replace(INVISIBLE, "");
    const views = visible === normal ? [normal] : [normal, visible];
    for (const rule of rules) {
      if (views.some((view) => rule.detect(view))) return { ok: false, rule: rule.id, reason: rule.reason };
    }
    return { ok: true };
  } catch {
    return { ok: false, rule: SCANNER_FAILED.rule, reason: SCANNER_FAILED.reason };
  }
}

/** Scans text with the city's rules. `reason` names the kind of secret and never quotes it. */
export function scanContent(text: string): ScanVerdict {
  return scanWith(RULES, text);
}

/** The 422 thrown for refused content; `rule` is the stable id of the rule that refused it. */
export class ContentRefusedError extends CityError {
  constructor(
    readonly rule: string,
    reason: string,
  ) {
    super("content_refused", `${reason} It was not stored: resend without it. (rule: ${rule})`);
  }
}

/**
 * Throws a `content_refused` CityError (a ContentRefusedError) when the text is refused or when
 * the scan cannot be completed. `rules` defaults to the city's table.
 */
export function assertClean(text: string, rules: readonly ScanRule[] = RULES): void {
  const verdict = scanWith(rules, text);
  if (!verdict.ok) throw new ContentRefusedError(verdict.rule, verdict.reason);
}
