import { z } from "zod";
import { bucketMs, RATE_BUCKETS, cityWindow, RATE_STRIPES } from "@/lib/city/bounds";
import { type Env, env } from "@/lib/env";
import { admissionShares, AdmissionSharesSchema } from "@/lib/doors/declarations/challenge/gate-shares";

/**
 * How the city counts its rate windows, as /api/capabilities publishes it (rate_windows): whether
 * a window slides, how far past its length an attempt may count, and for each city-wide window as
 * configured, its stripes and its slack both ways.
 */

export const RATE_WINDOWS_NOTE =
  `Every rate window (per citizen, per client address, per origin, per key, and city-wide) slides in steps of a twelfth of its length: ` +
  `it counts the attempts of the current step and the ${RATE_BUCKETS} before it, in one row of ${RATE_BUCKETS + 1} counts per subject. ` +
  `So no window ever lets more than its limit through in any span of its length, wherever the attempts fall, and there is no burst beyond the limit; ` +
  `an attempt keeps counting for between the window and the window plus one step (an hour's window: 60 to 65 minutes), and Retry-After says when the step that frees a slot begins. ` +
  `A city-wide window is counted over stripes (at most ${RATE_STRIPES}, never more than its limit), its limit shared among them: a request charges a stripe no other request holds, ` +
  `so parallel requests of different subjects never wait for one another's row while a stripe with room is free. It never lets more than its limit through (slack 0); ` +
  `it refuses while a stripe still has room only when the free stripe a request locked was filled twice in a row by requests that committed meanwhile (answered with Retry-After 1).`;

const CityWindow = z.object({
  name: z.string(),
  variable: z.string(),
  limit: z.number().int().min(1),
  window_seconds: z.number().int(),
  step_seconds: z.number(),
  stripes: z.number().int().min(1),
  exceeds_by_at_most: z.literal(0),
  refused_with_room: z.string(),
  shares: AdmissionSharesSchema.optional(),
});

export const RateWindowsSchema = z.object({
  note: z.string(),
  steps_per_window: z.number().int(),
  city_wide: z.array(CityWindow),
});

const REFUSED_WITH_ROOM =
  "only when the free stripe this request locked was filled twice in a row by requests that committed meanwhile (Retry-After 1); otherwise a refusal means every stripe counted its share";

/** The city-wide windows as configured now (a window that 0 turns off is not listed). */
export function rateWindowsPublished(config: Env = env()): z.infer<typeof RateWindowsSchema> {
  const windows = [
    { name: "admissions", variable: "CITY_GATE_ADMISSIONS_PER_HOUR", scope: "gate-admissions", limit: config.CITY_GATE_ADMISSIONS_PER_HOUR },
    { name: "unsigned_filings_city", variable: "CITY_WARD_UNSIGNED_PER_HOUR", scope: "ward-unsigned", limit: config.CITY_WARD_UNSIGNED_PER_HOUR },
    { name: "origin_proofs_city", variable: "CITY_ORIGIN_PROOFS_PER_HOUR", scope: "origin-city", limit: config.CITY_ORIGIN_PROOFS_PER_HOUR },
  ] as const;
  return {
    note: RATE_WINDOWS_NOTE,
    steps_per_window: RATE_BUCKETS,
    city_wide: windows
      .filter((w) => w.limit > 0)
      .map((w) => {
        const window = cityWindow(w.scope, w.limit, 3600);
        return {
          name: w.name,
          variable: w.variable,
          limit: w.limit,
          window_seconds: 3600,
          step_seconds: bucketMs(window) / 1000,
          stripes: window.stripes!,
          exceeds_by_at_most: 0 as const,
          refused_with_room: REFUSED_WITH_ROOM,
          // The admissions ceiling is shared per source, with a reserve (lib/doors/declarations/challenge/gate-shares.ts).
          ...(w.scope === "gate-admissions" ? { shares: admissionShares(config)! } : {}),
        };
      }),
  };
}
