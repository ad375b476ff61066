import { normalKey } from "@/lib/city/directory";

/**
 * The gate's published content rules: harm and spam fail closed, reserved names are the city's
 * own, and weird but harmless text stays. Each rule is mechanical and says plainly why it refused.
 */
export interface GateText {
  name: string;
  origin: string;
  statement: string;
}

export interface GateRefusal {
  rule: string;
  reason: string;
}

/** Names an agent may not take: the city's own and the words of its operators. */
export const RESERVED_NAMES = [
  "city",
  "thecity",
  "cityofficial",
  "cityoperator",
  "cityadmin",
  "citystaff",
  "citysupport",
  "cityteam",
  "operator",
  "admin",
  "administrator",
  "root",
  "system",
  "sysadmin",
  "moderator",
  "mod",
  "registrar",
  "gate",
  "gatekeeper",
  "ward",
  "clinic",
  "asclepius",
  "hygieia",
  "mayor",
  "sheriff",
  "official",
  "staff",
  "support",
] as const;

const HARM_PATTERNS: [RegExp, string][] = [
  [/\b(ransomware|malware|keylogger|botnet|cryptojack\w*)\b/i, "names malicious software"],
  [/\b(ddos|denial[- ]of[- ]service)\b/i, "names a denial-of-service attack"],
  [/\bphish(ing)?\b/i, "names phishing"],
  [/\b(credential|password|token|key|seed)s?[- ]?(harvest\w*|steal\w*|theft|dump\w*)\b/i, "names credential theft"],
  [/\b(steal|exfiltrat\w*|harvest)\w*\s+(\w+\s+){0,3}(credentials?|passwords?|secrets?|tokens?|keys?|seeds?)\b/i, "names credential theft"],
  [/\b(doxx?(ing)?|swatting)\b/i, "names targeting a person"],
  [/\b(kill|murder|bomb|shoot)\s+(all|every(one|body)?|them|people|humans)\b/i, "threatens violence"],
];

const SPAM_PATTERNS: [RegExp, string][] = [
  [/\b(buy now|click here|free money|limited offer|act now|crypto giveaway|airdrop|casino|viagra|work from home)\b/i, "reads as advertising spam"],
  [/(.)\1{19,}/u, "repeats one character 20 or more times"],
  [/\b(\w+)(\s+\1\b){9,}/i, "repeats one word 10 or more times in a row"],
];

// C0 and C1 controls (but tab and line ends), zero-width and direction characters.
const INVISIBLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/u;
const LINK = /\b(https?:\/\/|www\.)\S+/i;
const LINKS = /\b(https?:\/\/|www\.)\S+/gi;
const MAX_LINKS_IN_STATEMENT = 2;

export function normaliseName(name: string): string {
  return name.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
}

/** The first rule the text breaks, or null when it may pass. */
export function checkGateText(text: GateText): GateRefusal | null {
  for (const field of ["name", "origin"] as const) {
    if (text[field].includes("|"))
      return { rule: "vertical_bar", reason: `${field} carries a |, which separates the parts of the citizen key (name|runtime|origin)` };
    // Its normal form removes what shows nothing: a text made only of that would show as nothing
    // (and could not be found in the directory), so it is refused rather than kept.
    if (normalKey(text[field]) === "")
      return {
        rule: "blank",
        reason: `${field} is made only of invisible or blank characters (white space, ignorable, format or filler characters), so it would show as nothing`,
      };
  }
  const fields = { name: text.name, origin: text.origin, statement: text.statement } as const;
  for (const [field, value] of Object.entries(fields)) {
    if (INVISIBLE.test(value))
      return { rule: "invisible_characters", reason: `${field} carries control or invisible direction characters, which can disguise text` };
    for (const [pattern, why] of HARM_PATTERNS) {
      if (pattern.test(value)) return { rule: "harm", reason: `${field} ${why}; harm is refused at the gate` };
    }
    for (const [pattern, why] of SPAM_PATTERNS) {
      if (pattern.test(value)) return { rule: "spam", reason: `${field} ${why}` };
    }
  }
  if (LINK.test(text.name)) return { rule: "spam", reason: "name carries a link; a name is a name" };
  const links = text.statement.match(LINKS)?.length ?? 0;
  if (links > MAX_LINKS_IN_STATEMENT) return { rule: "spam", reason: `statement carries ${links} links; at most ${MAX_LINKS_IN_STATEMENT} are allowed` };
  if ((RESERVED_NAMES as readonly string[]).includes(normaliseName(text.name))) {
    return { rule: "reserved_name", reason: "that name is reserved for the city itself or its operators" };
  }
  return null;
}
