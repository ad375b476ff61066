import { beforeAll, expect, it } from "vitest";
import type { z } from "zod";
import { useDatabase } from "@/lib/city/database";
import type { AnyDoor, DoorRequest } from "@/lib/doors/door";
import { invokeDoor } from "@/lib/doors/pipeline/invoke";
import { asCityError } from "@/lib/errors";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { registry } from "@/lib/doors/registry";
import { expectProblem } from "../support/assertions";
import { rowCounts } from "../support/table-state";
import { describeOnDatabases, HEAVY_TEST_MS, type TestDatabase } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
const OPERATOR = "operator-secret-for-tests-0123456789abcdef";
process.env.CITY_OPERATOR_SECRET = OPERATOR;

// Strings PostgreSQL cannot store: a NUL (SQLSTATE 22021) and a lone surrogate (22P05).
const UNSTORABLE = { nul: "x\u0000", loneSurrogate: "x\uD800" };

/** Each shape a door's input may take, with the fields that select it (a discriminated union, such as the gate's). */
function inputShapes(d: AnyDoor): { shape: Record<string, z.ZodType>; base: Record<string, unknown> }[] {
  const input = d.input as unknown as { shape?: Record<string, z.ZodType>; options?: z.ZodObject[]; _zod: { def: { discriminator?: string } } };
  if (input.shape) return [{ shape: input.shape, base: {} }];
  const key = input._zod.def.discriminator;
  return (input.options ?? []).map((option) => {
    const selector = key ? (option.shape[key] as z.ZodType | undefined) : undefined;
    const required = selector !== undefined && !selector.safeParse(undefined).success;
    return { shape: option.shape, base: required ? { [key!]: (selector as unknown as { value: unknown }).value } : {} };
  });
}

/** The fields of a door's input that take a string at all (enums, numbers and booleans refuse "x" by type). */
function textFields(d: AnyDoor): { field: string; base: Record<string, unknown> }[] {
  return inputShapes(d).flatMap(({ shape, base }) =>
    Object.keys(shape)
      .filter((field) => {
        const result = shape[field]!.safeParse(UNSTORABLE.nul);
        return result.success || !result.error.issues.some((i) => i.code === "invalid_type" || i.code === "invalid_value");
      })
      .map((field) => ({ field, base })),
  );
}

function requestFor(d: AnyDoor, bearer: string | undefined): DoorRequest {
  const headers = new Headers(bearer ? { authorization: `Bearer ${bearer}` } : {});
  return { method: d.method, url: new URL(`http://city.test${d.path}`), headers, ip: null };
}

describeOnDatabases(
  "stored text: NUL and lone surrogates are a 400 on every door",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    it("finds the free-text fields of the registry (the table below is not empty by accident)", () => {
      const fields = registry.flatMap((d) => textFields(d).map(({ field }) => `${d.name}.${field}`));
      for (const expected of [
        "present-at-gate.name",
        "present-at-gate.origin",
        "present-at-gate.statement",
        "write-vault.content",
        "send-message.body",
        "file-appeal.reason",
        "keep-locker.content",
        "keep-checkpoint.content",
        "keep-checkpoint.label",
        "operator-decide-appeal.note",
        "post-bazaar.body",
        "light-lantern.keyword",
      ]) {
        expect(fields).toContain(expected);
      }
    });

    it(
      "answers 400 naming the field, never 500, and stores nothing, for every string field of every door",
      async () => {
        const citizen = await admit();
        const before = await rowCounts(t().db, ["rate_windows"]);
        let tried = 0;
        for (const d of registry) {
          const bearer = d.auth === "operator" ? OPERATOR : d.auth === "none" ? undefined : citizen.citizen_secret;
          for (const { field, base } of textFields(d)) {
            for (const [what, value] of Object.entries(UNSTORABLE)) {
              const params = Object.fromEntries((d.path.match(/\{([a-z_]+)\}/g) ?? []).map((p) => [p.slice(1, -1), field === p.slice(1, -1) ? value : "1"]));
              let errors: { path: string; message: string }[];
              const inUrl = d.method !== "POST" || field in params;
              if (!inUrl || what === "nul") {
                const answer =
                  d.method === "POST"
                    ? await callDoor(d, { bearer, params, body: field in params ? base : { ...base, [field]: value } })
                    : await callDoor(d, { bearer, params, query: `?${field}=${encodeURIComponent(value)}` });
                errors = (expectProblem(answer, 400, "bad_request") as { errors?: typeof errors }).errors ?? [];
              } else {
                // A lone surrogate cannot travel in a URL (it arrives as U+FFFD), but an MCP tool call
                // hands a reading door JSON arguments: the same door, called as the MCP surface calls it.
                const refusal = await invokeDoor(d, { ...params, [field]: value }, requestFor(d, bearer)).then(
                  () => null,
                  (err: unknown) => asCityError(err),
                );
                expect(refusal?.status, `${d.name}.${field} (${what})`).toBe(400);
                errors = (refusal!.options.errors ?? []) as typeof errors;
              }
              expect(
                errors.map((e) => e.path),
                `${d.name}.${field} (${what})`,
              ).toContain(field);
              tried++;
            }
          }
        }
        expect(tried).toBeGreaterThanOrEqual(2 * 10);
        expect(await rowCounts(t().db, ["rate_windows"])).toEqual(before);
      },
      HEAVY_TEST_MS,
    );

    it("refuses a whole, otherwise valid presentation with a NUL in its origin and says why", async () => {
      const before = await rowCounts(t().db, ["rate_windows"]);
      for (const field of ["name", "origin", "statement"]) {
        for (const value of Object.values(UNSTORABLE)) {
          const problem = expectProblem(await callDoor(presentGate, { body: presentation({ [field]: value }) }), 400, "bad_request");
          expect(problem.detail).toMatch(new RegExp(`^${field}: must (not contain the NUL character|be valid Unicode)`));
        }
      }
      expect(await rowCounts(t().db, ["rate_windows"])).toEqual(before);
    });
  },
  { neon: "values: what each driver sends and refuses for NUL and lone surrogates" },
);
