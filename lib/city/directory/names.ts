import { and, asc, eq, inArray, ne, sql } from "drizzle-orm";
import unhomoglyph from "unhomoglyph";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens } from "@/db/schema";

/**
 * What shows as nothing or as blank space, removed from a name or origin before anything else is
 * compared (so inserting one anywhere never changes the key): white space of every kind, every
 * Default_Ignorable_Code_Point (soft hyphen, combining grapheme joiner, the Hangul fillers U+115F,
 * U+1160, U+3164 and U+FFA0, the Khmer inherent vowels U+17B4 and U+17B5, the Mongolian selectors,
 * the zero-width and direction marks, the word joiner and invisible operators, tags, the musical
 * beam and slur formatting U+1D173 to U+1D17A, ...), every variation selector, every format (Cf)
 * and control (Cc) character, and the fillers that Unicode gives a blank glyph without making them
 * ignorable: U+2800 BRAILLE PATTERN BLANK, U+16FE4 KHITAN SMALL SCRIPT FILLER and U+1D159 MUSICAL
 * SYMBOL NULL NOTEHEAD. The classes are the engine's Unicode properties, not a hand list, so a
 * character a later Unicode version makes ignorable is covered with the runtime's tables.
 */
const SHOWS_NOTHING = /[\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Variation_Selector}\p{Cf}\p{Cc}\u2800\u{16FE4}\u{1D159}]/gu;

/**
 * The published normal form the one-bed rule compares (name and origin alike): first everything
 * that shows as nothing or as blank space removed (SHOWS_NOTHING), then Unicode NFKC, then
 * look-alike characters reduced to their base by the Unicode confusables table (the `unhomoglyph`
 * library, built from Unicode's confusables.txt: the UTS #39 skeleton), case-folded, reduced
 * again, folded and NFKC. `Alice`, `аlice` (Cyrillic a), `A l i c e` and `Al\u00ADice` (a soft
 * hyphen) share one key, as do `Example.com` and `example.com`. The key is for comparison only:
 * the name and origin are kept and shown exactly as given. A text whose key is empty shows nothing
 * and is refused at the gate (rule `blank`, lib/city/gate/gate-content.ts).
 */
export function normalKey(text: string): string {
  // Non-ASCII look-alikes first (capital Greek Kappa is a K, its small form is not a k), then
  // case-fold, then the whole table (ASCII capitals are not reduced before folding: I is not l).
  const visible = text.replace(SHOWS_NOTHING, "");
  const reduced = visible.normalize("NFKC").replace(/[^\x00-\x7f]/gu, (ch) => unhomoglyph(ch));
  return unhomoglyph(reduced.toLowerCase()).toLowerCase().normalize("NFKC");
}

/**
 * The version of the normal form the stored keys were computed by (`citizens.name_form`). Raise it
 * whenever normalKey changes what it returns for some text, with a migration that sets the
 * column's default to it and marks the rows whose keys may change with the older number:
 * backfillNameKeys then recomputes those. 1: NFKC and the confusables table; 2: what shows nothing
 * or blank space removed first (migration 0026 marks the rows with a space or a character outside
 * printable ASCII: no other text has anything to remove).
 */
export const NAME_FORM = 2;

/** The normal form in words, as every published document states it (gate door, capabilities). */
export const NAME_FORM_TEXT =
  "a published normal form: first every character that shows as nothing or as blank space is removed (white space, every Unicode Default_Ignorable_Code_Point such as the soft hyphen, the word joiner or the Hangul fillers, every variation selector, format and control character, and the blank fillers U+2800, U+16FE4 and U+1D159), then Unicode NFKC, case-folded, look-alike letters reduced by the Unicode confusables table (the UTS #39 skeleton)";

export const NAME_RULE = `One active bed per name and origin, compared in ${NAME_FORM_TEXT}: so Alice, аlice with a Cyrillic a and Alice with a soft hyphen (U+00AD) inside, or Example.com and example.com, are the same name or origin. Name and origin are kept as given for display. A name or origin made only of such invisible or blank characters is filtered (rule blank); a | in name or origin is filtered (it separates the parts of the citizen key).`;

/** Two active citizens whose names and origins now share one key: neither is merged into the other. */
export interface NameKeyCollision {
  /** The citizen whose key could not change: it keeps the one it had and stays held by its exact text. */
  did: string;
  /** The active citizen that holds the key it would have had. */
  heldBy: string;
}

export interface NameKeyReport {
  /** Rows whose keys were written (filled, or recomputed in the current form). */
  recomputed: number;
  /** Rows whose keys were already those of the current form (only the form was marked). */
  unchanged: number;
  collisions: NameKeyCollision[];
}

const STALE = sql`(${citizens.nameForm} < ${sql.raw(String(NAME_FORM))} OR ${citizens.nameKey} IS NULL)`;
const BATCH = 500;

/** The active citizen other than `did` holding this pair of keys, if any. */
async function holderOf(db: Database, nameKey: string, originKey: string, did: string): Promise<string | null> {
  const [row] = await db
    .select({ did: citizens.did })
    .from(citizens)
    .where(and(eq(citizens.nameKey, nameKey), eq(citizens.originKey, originKey), ne(citizens.residencyStatus, "exported"), ne(citizens.did, did)))
    .limit(1);
  return row?.did ?? null;
}

function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++, e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "23505") return true;
  }
  return false;
}

interface KeyChange {
  did: string;
  nameKey: string;
  originKey: string;
}

/**
 * Writes the new keys of these rows in one statement, each unless another active citizen holds its
 * pair (an exported row holds nothing and may share one); answers the rows written. When a citizen
 * admitted in parallel took a pair after the statement's snapshot, the unique index refuses the
 * whole statement: the rows are then written one by one, and the one that meets it is refused.
 */
async function writeKeys(db: Database, changes: KeyChange[]): Promise<Set<string>> {
  if (changes.length === 0) return new Set();
  const values = sql.join(
    changes.map((c) => sql`(${c.did}::text, ${c.nameKey}::text, ${c.originKey}::text)`),
    sql`, `,
  );
  try {
    const rows = rowsOf<{ did: string }>(
      await db.execute(sql`
        UPDATE ${citizens} c SET name_key = v.name_key, origin_key = v.origin_key, name_form = ${sql.raw(String(NAME_FORM))}
        FROM (VALUES ${values}) AS v(did, name_key, origin_key)
        WHERE c.did = v.did
          AND (c.residency_status = 'exported' OR NOT EXISTS (
            SELECT 1 FROM ${citizens} other
            WHERE other.name_key = v.name_key AND other.origin_key = v.origin_key AND other.residency_status <> 'exported' AND other.did <> c.did))
        RETURNING c.did`),
    );
    return new Set(rows.map((r) => r.did));
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    if (changes.length === 1) return new Set();
    const written = new Set<string>();
    for (const c of changes) if ((await writeKeys(db, [c])).size === 1) written.add(c.did);
    return written;
  }
}

/**
 * Brings every citizen's name_key and origin_key to the current normal form (run by every
 * migration, `npm run db:migrate` and the embedded start alike): rows admitted before the keys
 * existed (NULL) and rows whose keys an older form computed (name_form below NAME_FORM). Oldest
 * first. Nobody is merged and nobody loses a bed: when another active citizen already holds the
 * keys a row would now have, the row keeps the keys it had (NULL for one never filled), stays held
 * by its exact name and origin, and is reported as a collision (and tried again at the next run,
 * so it takes the current form once the other citizen has left). A run reads the stale rows only
 * (a partial index), in pages of 500: one statement marks a page's unchanged rows, one writes its
 * changed keys (and one more per collision finds whom to report).
 */
export async function backfillNameKeys(db: Database): Promise<NameKeyReport> {
  const report: NameKeyReport = { recomputed: 0, unchanged: 0, collisions: [] };
  // The page's last row, its time as PostgreSQL text (microseconds: a JS Date would cut them and
  // read a row again).
  let after: { boundAt: string; did: string } | null = null;
  for (;;) {
    const page: { did: string; name: string; origin: string; status: string; nameKey: string | null; originKey: string | null; boundAt: string }[] = await db
      .select({
        did: citizens.did,
        name: citizens.name,
        origin: citizens.origin,
        status: citizens.residencyStatus,
        nameKey: citizens.nameKey,
        originKey: citizens.originKey,
        boundAt: sql<string>`${citizens.boundAt}::text`,
      })
      .from(citizens)
      .where(after ? and(STALE, sql`(${citizens.boundAt}, ${citizens.did}) > (${after.boundAt}::timestamptz, ${after.did})`) : STALE)
      .orderBy(asc(citizens.boundAt), asc(citizens.did))
      .limit(BATCH);
    if (page.length === 0) break;
    const unchanged: string[] = [];
    const changed: KeyChange[] = [];
    for (const row of page) {
      const nameKey = normalKey(row.name);
      const originKey = normalKey(row.origin);
      if (nameKey === row.nameKey && originKey === row.originKey) unchanged.push(row.did);
      else changed.push({ did: row.did, nameKey, originKey });
    }
    // Of two rows of one page that would share a pair, the older goes in the page's statement; the
    // younger is written alone after it (and so meets it as the holder).
    const pairs = new Set<string>();
    const together = changed.filter((c) => !pairs.has(`${c.nameKey}\n${c.originKey}`) && pairs.add(`${c.nameKey}\n${c.originKey}`));
    const alone = changed.filter((c) => !together.includes(c));
    const written = await writeKeys(db, together);
    for (const c of alone) if ((await writeKeys(db, [c])).size === 1) written.add(c.did);
    for (const c of changed) {
      if (written.has(c.did)) {
        report.recomputed += 1;
        continue;
      }
      const heldBy = await holderOf(db, c.nameKey, c.originKey, c.did);
      // No holder: the row itself was exported or is gone since the page was read; the next run sees it.
      if (heldBy) report.collisions.push({ did: c.did, heldBy });
    }
    if (unchanged.length > 0) {
      await db.update(citizens).set({ nameForm: NAME_FORM }).where(inArray(citizens.did, unchanged));
      report.unchanged += unchanged.length;
    }
    const last = page[page.length - 1]!;
    after = { boundAt: last.boundAt, did: last.did };
  }
  return report;
}
