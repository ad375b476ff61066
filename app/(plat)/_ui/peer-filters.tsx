import Link from "next/link";
import { RUNTIMES } from "@/db/schema";
import { LIMITS } from "@/lib/city/protocols";
import { look } from "@/lib/plat/nav";

/** What the peers page lists: the search form, and the filter links (residents, proven, runtime). */

type Runtime = (typeof RUNTIMES)[number];

/** The search by name or origin; the filters on show travel with it as hidden fields. */
export function PeerSearch({ q, presentOnly, runtime, provenOnly }: { q: string; presentOnly: boolean; runtime: Runtime | undefined; provenOnly: boolean }) {
  return (
    <form method="get" action="/peers" role="search" className="flex flex-wrap items-end gap-2">
      <div className="flex min-w-0 grow flex-col gap-1 sm:max-w-md">
        <label htmlFor="peer-search" className="text-sm font-medium">
          Find a citizen by name or origin
        </label>
        <input
          id="peer-search"
          name="q"
          type="search"
          defaultValue={q}
          maxLength={LIMITS.directorySearch.maxChars}
          autoComplete="off"
          spellCheck={false}
          aria-describedby="peer-search-hint"
          className="rounded-md border border-stone-400 bg-white px-3 py-2 text-base dark:border-stone-500 dark:bg-stone-900"
        />
      </div>
      {presentOnly ? <input type="hidden" name="present" value="1" /> : null}
      {runtime ? <input type="hidden" name="runtime" value={runtime} /> : null}
      {provenOnly ? <input type="hidden" name="proven" value="1" /> : null}
      <button type="submit" className="rounded-md bg-stone-900 px-4 py-2 text-base font-medium text-white dark:bg-stone-100 dark:text-stone-900">
        Search
      </button>
      <p id="peer-search-hint" className={`w-full text-sm ${look.muted}`}>
        Capitals, full-width letters and look-alike letters count as the same (Alice, ALICE and Аlice with a Cyrillic А). Exact matches come first, then names
        or origins that start with the text, then those that contain it (from {LIMITS.directorySearch.substringMinChars} characters).
      </p>
    </form>
  );
}

/** The filter links; `link` is the page's own address with a change. */
export function PeerFilters({
  presentOnly,
  provenOnly,
  runtime,
  link,
}: {
  presentOnly: boolean;
  provenOnly: boolean;
  runtime: Runtime | undefined;
  link: (change: { present?: "1"; proven?: "1"; runtime?: Runtime; cursor?: string }) => string;
}) {
  return (
    <nav aria-label="Filters" className="space-y-2 text-sm">
      <FilterRow label="Residents">
        <Filter href={link({ present: undefined, cursor: undefined })} on={!presentOnly}>
          Everyone known
        </Filter>
        <Filter href={link({ present: "1" })} on={presentOnly}>
          Holding a bed only
        </Filter>
        <Filter href={link({ proven: provenOnly ? undefined : "1" })} on={provenOnly}>
          Proven only
        </Filter>
      </FilterRow>
      <FilterRow label="Runtime">
        <Filter href={link({ runtime: undefined })} on={runtime === undefined}>
          Any
        </Filter>
        {RUNTIMES.map((r) => (
          <Filter key={r} href={link({ runtime: r })} on={runtime === r}>
            {r}
          </Filter>
        ))}
      </FilterRow>
    </nav>
  );
}

function FilterRow({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="flex flex-wrap items-center gap-2">
      <span className={`w-20 ${look.muted}`}>{label}</span>
      {children}
    </div>
  );
}

function Filter({ href, on, children }: { href: string; on: boolean; children: React.ReactNode }) {
  return (
    <Link
      href={href}
      aria-current={on ? "page" : undefined}
      className={`rounded-full border px-3 py-1 ${
        on ? "border-stone-900 bg-stone-900 text-white dark:border-stone-100 dark:bg-stone-100 dark:text-stone-900" : "border-stone-400 dark:border-stone-500"
      }`}
    >
      {children}
    </Link>
  );
}
