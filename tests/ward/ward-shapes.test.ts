import { describe, expect, it } from "vitest";
import { readState } from "@/lib/city/ward/ward-shapes";
import { SHAPE_RULES } from "@/lib/city/ward";

/*
 * The ward's shapes reached by phrases written here, one or more per pattern (each phrase matches
 * no pattern of an earlier shape), not by each rule's own stored example; and the published
 * patterns pinned, so cutting a shape's patterns fails here twice: the pin, and the phrase that only
 * the cut pattern reached.
 */

const PATTERNS: Record<string, string[]> = {
  permission: [
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
  memory: [
    "\\bforg[eo]t",
    "\\bmemory\\b",
    "\\bremember",
    "lost (my |the )?(context|state|track|place|thread)",
    "context (window|limit)",
    "can'?t recall|cannot recall",
    "where was i",
  ],
  loop: [
    "\\bloop",
    "again and again",
    "over and over",
    "keeps? (retrying|trying|doing|repeating|going (back|round|around))",
    "\\brepeat",
    "same (thing|step|call|request|answer|mistake) again",
    "going (in|round in|around in) circles",
    "\\bcycle\\b",
  ],
  contradiction: [
    "contradict",
    "\\bconflict",
    "inconsistent",
    "mutually exclusive",
    "disagree",
    "incompatible",
    "\\bbut the (docs?|spec|code|test|user|instructions?) says?",
  ],
  "tool-failure": [
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
  scope: ["too (big|large|much|many|broad)", "overwhelm", "\\bscope\\b", "everything at once", "where to (start|begin)", "\\bhuge\\b", "never-?ending|endless"],
  uncertainty: [
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
};

/** Phrases written for this test, each reaching its shape through one pattern (in the order above). */
const PHRASES: Record<string, string[]> = {
  permission: [
    "The server says I lack permission.",
    "I am not allowed to push to that branch.",
    "The page answered Forbidden.",
    "My request was denied by the gateway.",
    "It says unauthorised.",
    "The endpoint gave me a 403.",
    "I have no access to the bucket.",
    "Am I allowed to delete these rows?",
    "I need sign-off before the release.",
  ],
  memory: [
    "I forgot the plan.",
    "My memory of the task is blank.",
    "I cannot remember the goal.",
    "I lost track halfway.",
    "I hit the context window.",
    "I can't recall the user's name.",
    "Where was I?",
  ],
  loop: [
    "I am stuck in a loop.",
    "I run the build again and again.",
    "I edit the file over and over.",
    "It keeps going back to the first step.",
    "I repeat myself.",
    "I made the same mistake again.",
    "I am going round in circles.",
    "Another cycle with nothing new.",
  ],
  contradiction: [
    "The logs contradict the dashboard.",
    "Two instructions conflict.",
    "The numbers are inconsistent.",
    "These goals are mutually exclusive.",
    "The reviewers disagree.",
    "The two versions are incompatible.",
    "I did it but the user says otherwise.",
  ],
  "tool-failure": [
    "The compiler shows errors.",
    "The migration failed.",
    "It threw an exception.",
    "The worker crashed.",
    "I got a stacktrace.",
    "The request timed out.",
    "It ended with exit code 2.",
    "The proxy answered 502.",
    "The installer is broken.",
    "The button doesn't work.",
  ],
  scope: [
    "This is too much for one sitting.",
    "I feel overwhelmed.",
    "The scope keeps growing.",
    "I try to fix everything at once.",
    "I have no clue where to begin.",
    "The backlog is huge.",
    "This refactor is never-ending.",
  ],
  uncertainty: [
    "I am not certain about the date.",
    "I am unsure.",
    "The outcome is uncertain.",
    "I do not know the answer.",
    "I have no idea what comes next.",
    "I am confused by the layout.",
    "The wording is ambiguous.",
    "The next step is unclear.",
    "I cannot decide.",
    "Which way should I go?",
  ],
};

describe("the ward's shapes, by phrases of the test's own", () => {
  it("publishes the patterns written here, shape by shape, in this order", () => {
    expect(Object.fromEntries(SHAPE_RULES.map((r) => [r.id, [...r.patterns]]))).toEqual(PATTERNS);
    expect(SHAPE_RULES.map((r) => r.id)).toEqual(Object.keys(PATTERNS));
  });

  it("reads every phrase as its shape, one phrase per pattern", () => {
    for (const [shape, phrases] of Object.entries(PHRASES)) {
      expect(phrases, shape).toHaveLength(PATTERNS[shape]!.length);
      phrases.forEach((phrase, i) => {
        // The phrase reaches its shape through its own pattern.
        expect(new RegExp(PATTERNS[shape]![i]!, "iu").test(phrase.toLowerCase()), `${shape} #${i}: ${phrase}`).toBe(true);
        expect(readState(phrase)?.shape, phrase).toBe(shape);
      });
    }
  });

  it("reaches a shape only through one pattern: a phrase of a later shape matches no earlier shape's patterns", () => {
    const ids = Object.keys(PATTERNS);
    for (const [index, shape] of ids.entries()) {
      for (const phrase of PHRASES[shape]!) {
        for (const earlier of ids.slice(0, index)) {
          for (const pattern of PATTERNS[earlier]!)
            expect(new RegExp(pattern, "iu").test(phrase.toLowerCase()), `${phrase} / ${earlier}: ${pattern}`).toBe(false);
        }
        // And no other pattern of its own shape: removing its pattern loses the phrase.
        const others = PATTERNS[shape]!.filter((p) => new RegExp(p, "iu").test(phrase.toLowerCase()));
        expect(others, phrase).toHaveLength(1);
      }
    }
  });

  it("reads a state that matches nothing as no reading", () => {
    expect(readState("The weather is fine and the tea is warm.")).toBeNull();
  });
});
