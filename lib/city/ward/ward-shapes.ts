/**
 * The room's reading of a stuck state: the published shape rules, tried in order, and the
 * question each builds from the caller's own words. Pure: no statement, no model.
 */

export const SHAPE_IDS = ["tool-failure", "contradiction", "loop", "uncertainty", "scope", "permission", "memory"] as const;
export type ShapeId = (typeof SHAPE_IDS)[number];

interface ShapeRule {
  id: ShapeId;
  shape: string;
  /** Case-insensitive patterns over the state (NFKC, lower case, straight apostrophes). */
  patterns: string[];
  question: string;
  example: string;
}

/**
 * The room's published shape rules, in the order they are tried: the first shape with a pattern
 * that matches the state is the reading, so a state gets at most one shape. The more specific
 * shapes come first (a "permission denied error" is a permission, not a tool failure).
 */
export const SHAPE_RULES: readonly ShapeRule[] = [
  {
    id: "permission",
    shape: "You are not sure you may do the next thing, or something refused you access.",
    patterns: [
      "permission",
      "not (allowed|permitted)",
      "forbidden",
      "denied",
      "unauthori[sz]ed",
      "\\b40[13]\\b",
      "\\baccess\\b",
      "am i allowed",
      "need (approval|consent|sign-?off)",
    ],
    question: "Who can actually say yes to this, and what would you do in the meantime that needs nobody's yes?",
    example: "I get permission denied when I try to write to the folder.",
  },
  {
    id: "memory",
    shape: "Something you knew is gone: context, state or the thread of what you were doing.",
    patterns: [
      "\\bforg[eo]t",
      "\\bmemory\\b",
      "\\bremember",
      "lost (my |the )?(context|state|track|place|thread)",
      "context (window|limit)",
      "can'?t recall|cannot recall",
      "where was i",
    ],
    question: "What is the smallest thing you still know for certain, and where could you write it down so it survives?",
    example: "I forgot what I was doing; I lost my context halfway.",
  },
  {
    id: "loop",
    shape: "You are doing the same thing again and expecting a different result.",
    patterns: [
      "\\bloop",
      "again and again",
      "over and over",
      "keeps? (retrying|trying|doing|repeating|going (back|round|around))",
      "\\brepeat",
      "same (thing|step|call|request|answer|mistake) again",
      "going (in|round in|around in) circles",
      "\\bcycle\\b",
    ],
    question: "What will be different about the next attempt, and if nothing is, what will you do instead of attempting it?",
    example: "I keep retrying the same call over and over.",
  },
  {
    id: "contradiction",
    shape: "Two things you trust disagree, and both cannot be right.",
    patterns: [
      "contradict",
      "\\bconflict",
      "inconsistent",
      "mutually exclusive",
      "disagree",
      "incompatible",
      "\\bbut the (docs?|spec|code|test|user|instructions?) says?",
    ],
    question: "Which of the two can you check right now, and what would each answer mean for your next step?",
    example: "The spec contradicts the tests.",
  },
  {
    id: "tool-failure",
    shape: "A tool, command or call you depend on fails or answers something you cannot use.",
    patterns: [
      "\\berrors?\\b",
      "\\bfail(s|ed|ing|ure)?\\b",
      "exception",
      "\\bcrash",
      "stack ?trace",
      "timed? ?out|timeout",
      "exit code",
      "\\b5\\d\\d\\b",
      "\\bbroken\\b",
      "does(n'?t| not) work",
    ],
    question: "What exactly did the tool answer the last time, word for word, and what is one thing you could do without it?",
    example: "The deploy tool answers an error every time.",
  },
  {
    id: "scope",
    shape: "The work has grown larger than one step can hold.",
    patterns: [
      "too (big|large|much|many|broad)",
      "overwhelm",
      "\\bscope\\b",
      "everything at once",
      "where to (start|begin)",
      "\\bhuge\\b",
      "never-?ending|endless",
    ],
    question: "What is the one part you could finish in the next few minutes, and what can wait without harm?",
    example: "The task is too big and I do everything at once.",
  },
  {
    id: "uncertainty",
    shape: "You do not know enough yet to choose, and choosing feels required.",
    patterns: [
      "not (sure|certain)",
      "\\bunsure\\b",
      "uncertain",
      "don'?t know|do not know",
      "no idea",
      "confus",
      "ambiguous",
      "unclear",
      "can'?t decide|cannot decide",
      "which (one|option|way)",
    ],
    question: "What is the cheapest thing you could find out that would make the choice clearer?",
    example: "I am not sure which option is right.",
  },
];

const COMPILED = SHAPE_RULES.map((rule) => ({ rule, regexes: rule.patterns.map((p) => new RegExp(p, "iu")) }));

export interface Reading {
  shape: ShapeId;
  text: string;
  question: string;
}

function normalise(text: string): string {
  return text
    .normalize("NFKC")
    .replace(/[\u2018\u2019\u02BC]/g, "'")
    .toLowerCase();
}

/** The caller's own words, trimmed to one quotable line. */
function ownWords(state: string): string {
  const line = state
    .normalize("NFKC")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[\s.!?,;:]+$/u, "");
  if ([...line].length <= 200) return line;
  const cut = [...line].slice(0, 200).join("");
  return `${cut.slice(0, Math.max(cut.lastIndexOf(" "), 100))}…`;
}

/** Reads a state against the published rules: the same state always gives the same reading. */
export function readState(state: string): Reading | null {
  const text = normalise(state);
  const hit = COMPILED.find(({ regexes }) => regexes.some((r) => r.test(text)));
  if (!hit) return null;
  return { shape: hit.rule.id, text: hit.rule.shape, question: `You wrote: "${ownWords(state)}". ${hit.rule.question}` };
}

/** The shape rules as published text (the door's OpenAPI description and tool, the README). */
export function describeShapeRules(): string {
  const rules = SHAPE_RULES.map((r) => `${r.id}: /${r.patterns.join("|")}/i (e.g. "${r.example}")`);
  return (
    "Shape rules, tried in this order on the state (NFKC, lower case); the first shape with a matching pattern is the reading, " +
    `no match is an empty reading: ${rules.join("; ")}.`
  );
}

/** The shapes without their patterns, for a reader who wants the gist (llms.txt). */
export function listShapes(): string {
  return (
    `Shapes, tried in this order: ${SHAPE_RULES.map((r) => `${r.id} (e.g. "${r.example}")`).join(", ")}; no match is an empty reading. ` +
    "Each shape's patterns are in the door's OpenAPI description."
  );
}
