import { and, asc, eq, isNotNull, isNull, ne } from "drizzle-orm";
import unhomoglyph from "unhomoglyph";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";

/**
 * The published normal form the one-bed rule compares (name and origin alike): Unicode NFKC, then
 * look-alike characters reduced to their base by the Unicode confusables table (the `unhomoglyph`
 * library, built from Unicode's confusables.txt), case-folded, reduced again, folded and NFKC. `Alice` and `аlice` (Cyrillic a), `Example.com` and `example.com` share one key. The key
 * is for comparison only: the name and origin are kept and shown exactly as given.
 */
export function normalKey(text: string): string {
  // Non-ASCII look-alikes first (capital Greek Kappa is a K, its small form is not a k), then
  // case-fold, then the whole table (ASCII capitals are not reduced before folding: I is not l).
  const reduced = text.normalize("NFKC").replace(/[^\x00-\x7f]/gu, (ch) => unhomoglyph(ch));
  return unhomoglyph(reduced.toLowerCase()).toLowerCase().normalize("NFKC");
}

export const NAME_RULE =
  "One active bed per name and origin, compared in a published normal form: Unicode NFKC, case-folded, look-alike letters reduced by the Unicode confusables table (so Alice and аlice with a Cyrillic a, or Example.com and example.com, are the same name or origin). Name and origin are kept as given for display. A | in name or origin is filtered (it separates the parts of the citizen key).";

/**
 * Fills name_key and origin_key of citizens admitted before the keys existed (run by every
 * migration, `npm run db:migrate` and the embedded start alike). Oldest first: when two active
 * citizens share a normal form, the older keeps it and the younger stays matched by its exact
 * name and origin only, so no existing citizen loses its bed.
 */
export async function backfillNameKeys(db: Database): Promise<number> {
  const missing = await db
    .select({ did: citizens.did, name: citizens.name, origin: citizens.origin, status: citizens.residencyStatus })
    .from(citizens)
    .where(isNull(citizens.nameKey))
    .orderBy(asc(citizens.boundAt), asc(citizens.did));
  if (missing.length === 0) return 0;
  const held = await db
    .select({ nameKey: citizens.nameKey, originKey: citizens.originKey })
    .from(citizens)
    .where(and(isNotNull(citizens.nameKey), ne(citizens.residencyStatus, "exported")));
  const taken = new Set(held.map((r) => `${r.nameKey}\n${r.originKey}`));
  let filled = 0;
  for (const row of missing) {
    const nameKey = normalKey(row.name);
    const originKey = normalKey(row.origin);
    const pair = `${nameKey}\n${originKey}`;
    if (row.status !== "exported") {
      if (taken.has(pair)) continue;
      taken.add(pair);
    }
    await db.update(citizens).set({ nameKey, originKey }).where(eq(citizens.did, row.did));
    filled += 1;
  }
  return filled;
}
