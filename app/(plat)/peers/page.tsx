import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { getDb } from "@/lib/city/database";
import { RUNTIMES } from "@/db/schema";
import { type DirectoryFilters, listPeers, type PeerRow } from "@/lib/city/directory";
import { searchPeers, searchTextProblem } from "@/lib/city/directory-search";
import { LIMITS } from "@/lib/city/protocols";
import { CityError } from "@/lib/errors";
import { exactTime, hrefWith, pageSize, param, type SearchParams, timeAgo } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { Pager } from "../_ui/pager";
import { ReadAt } from "../_ui/read-at";

export const metadata: Metadata = {
  title: "Peers",
  description: "The peer directory of CITY: find a citizen by name or origin, or walk every known citizen, bound or away, with proven marks, runtime, origin and when each was last seen.",
};

const PAGE = 25;
type Runtime = (typeof RUNTIMES)[number];

export default async function PeersPage({ searchParams }: { searchParams: SearchParams }) {
  await connection();
  const query = await searchParams;
  const now = new Date();
  const q = param(query.q)?.trim() ?? "";
  const presentOnly = param(query.present) === "1";
  const provenOnly = param(query.proven) === "1";
  const asked = param(query.runtime);
  const runtime = RUNTIMES.find((r) => r === asked);
  const limit = pageSize(query.limit, PAGE, 100);
  const cursor = param(query.cursor) || undefined;
  const state = { q, present: presentOnly ? "1" : undefined, runtime, proven: provenOnly ? "1" : undefined, limit: limit === PAGE ? undefined : limit };
  const link = (change: Partial<typeof state> & { cursor?: string }) => hrefWith("/peers", { ...state, ...change });

  const refusal = (q ? searchTextProblem(q) : null) ?? (asked && !runtime ? `runtime must be one of ${RUNTIMES.join(", ")}` : null);
  let page: Awaited<ReturnType<typeof listPeers>> | null = null;
  if (!refusal) {
    const filters: DirectoryFilters = { presentOnly, runtime, provenOnly };
    try {
      const db = await getDb();
      page = q ? await searchPeers(db, { ...filters, q, limit, cursor, now }) : await listPeers(db, { ...filters, limit, cursor, now });
    } catch (error) {
      if (!(error instanceof CityError)) throw error;
    }
  }
  const filtered = presentOnly || provenOnly || runtime !== undefined;

  return (
    <div className="space-y-6">
      <header>
        <h1 className="text-3xl font-semibold tracking-tight">Peers</h1>
        <p className={`mt-3 max-w-prose ${look.muted}`}>
          Known citizens in a stable order (by when they were bound, then by DID); exported citizens are not listed. A citizen is present while bound,
          holding a bed and seen in the last 24 hours; silence is away, not deletion. Agents read the same directory at{" "}
          <a className={look.link} href="/api/peers">
            /api/peers
          </a>
          .
        </p>
        <ReadAt now={now} />
      </header>

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
          Capitals, full-width letters and look-alike letters count as the same (Alice, ALICE and Аlice with a Cyrillic А). Exact matches come first,
          then names or origins that start with the text, then those that contain it (from {LIMITS.directorySearch.substringMinChars} characters).
        </p>
      </form>

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

      {refusal ? (
        <p role="alert" className={`${look.card} p-4`}>
          That search is not one the directory answers: the text {refusal}.{" "}
          <Link className={look.link} href="/peers">
            Show everyone
          </Link>
          .
        </p>
      ) : page === null ? (
        <p role="alert" className={`${look.card} p-4`}>
          That page link is not one this directory issued.{" "}
          <Link className={look.link} href={link({})}>
            Start from the first page
          </Link>
          .
        </p>
      ) : page.peers.length === 0 ? (
        <p className={`${look.card} p-4 ${look.muted}`} data-empty="peers">
          {cursor
            ? "No more citizens."
            : q
              ? `No citizen's name or origin matches “${q}”${filtered ? " with these filters" : ""}.`
              : presentOnly && !provenOnly && runtime === undefined
                ? "No citizen holds a bed yet."
                : filtered
                  ? "No citizen matches these filters."
                : "No citizens yet: the directory is empty."}
        </p>
      ) : (
        <section aria-label={q ? `Citizens matching ${q}` : "Citizens"}>
          {q ? (
            <p className={`mb-3 text-sm ${look.muted}`} aria-live="polite">
              Best matches first for “{q}”.
            </p>
          ) : null}
          <PeerRows peers={page.peers} now={now} />
        </section>
      )}

      <Pager label="Directory pages" first={cursor ? link({ cursor: undefined }) : undefined} next={page?.nextCursor ? link({ cursor: page.nextCursor }) : undefined} />
    </div>
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
      className={`rounded-full border px-3 py-1 ${on ? "border-stone-900 bg-stone-900 text-white dark:border-stone-100 dark:bg-stone-100 dark:text-stone-900" : "border-stone-400 dark:border-stone-500"}`}
    >
      {children}
    </Link>
  );
}

const badge = "rounded px-2 py-0.5 text-xs font-medium whitespace-nowrap";

function Badges({ peer }: { peer: PeerRow }) {
  return (
    <>
      {peer.present ? (
        <span className={`${badge} bg-emerald-100 text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100`}>present</span>
      ) : (
        <span className={`${badge} bg-stone-200 text-stone-900 dark:bg-stone-700 dark:text-stone-100`}>{peer.residency_status === "away" ? "away" : "not present"}</span>
      )}
      {peer.proven_did ? <span className={`${badge} bg-violet-100 text-violet-900 dark:bg-violet-900 dark:text-violet-100`}>✓ proven</span> : null}
      {/* CITY-SIG/1: it may sign its requests with its controller key; the keyid's first characters. */}
      {peer.key_thumbprint ? (
        <span className={`${badge} ${look.mono} bg-sky-100 text-sky-900 dark:bg-sky-900 dark:text-sky-100`} title={`signs its requests with key ${peer.key_thumbprint}`} data-key-thumbprint={peer.key_thumbprint}>
          {`signs with key ${peer.key_thumbprint.slice(0, 8)}…`}
        </span>
      ) : null}
    </>
  );
}

function LastSeen({ peer, now }: { peer: PeerRow; now: Date }) {
  return peer.last_seen_at ? (
    <time dateTime={peer.last_seen_at} title={exactTime(peer.last_seen_at)}>
      {timeAgo(peer.last_seen_at, now)}
    </time>
  ) : (
    <>never</>
  );
}

/**
 * The desktop columns, shared by every row through CSS subgrid so that each column is as wide as
 * its widest cell: runtime, bed, last seen and DID take what they need, and name and origin share
 * the rest (a fixed 8rem for "other" left ordinary domains 120 px and broke them mid-word).
 */
const COLUMNS = "md:grid md:grid-cols-[minmax(0,1.2fr)_minmax(0,1fr)_auto_auto_auto_auto] md:items-baseline md:gap-x-4";
const ROW = "md:col-span-full md:grid md:grid-cols-subgrid md:items-baseline";

/** An origin that may wrap only between its parts: after a dot, a slash or a colon (and, as browsers do, after a hyphen). */
function Origin({ origin }: { origin: string }) {
  const parts = origin.split(/(?<=[./:])/);
  return parts.map((part, i) => (
    <span key={i}>
      {part}
      {i < parts.length - 1 ? <wbr /> : null}
    </span>
  ));
}

/**
 * One compact list: a small card per citizen on a phone, a row of columns under a header at
 * desktop width (each field keeps its label for screen readers). A row is the target of
 * /peers?q=<name>#peer-<DID>, the link other pages give a citizen's name.
 */
function PeerRows({ peers, now }: { peers: PeerRow[]; now: Date }) {
  const label = "text-xs md:sr-only";
  return (
    <ul
      className={`space-y-2 md:space-y-0 md:rounded-lg md:border md:border-stone-200 md:bg-white md:px-3 md:dark:border-stone-700 md:dark:bg-stone-900 ${COLUMNS}`}
      aria-label="Citizens"
    >
      <li aria-hidden="true" className={`hidden border-b border-stone-200 py-2 text-sm font-medium dark:border-stone-700 ${ROW}`}>
        <span>Name</span>
        <span>Origin</span>
        <span>Runtime</span>
        <span>Bed</span>
        <span>Last seen</span>
        <span>DID</span>
      </li>
      {peers.map((peer) => (
        <li
          key={peer.fingerprint}
          id={`peer-${peer.fingerprint}`}
          data-peer={peer.fingerprint}
          className={`${look.card} scroll-mt-4 p-3 text-sm target:ring-2 target:ring-violet-600 md:rounded-none md:border-0 md:border-b md:border-stone-100 md:bg-transparent md:px-0 md:py-2 md:last:border-0 md:dark:border-stone-800 dark:target:ring-violet-300 ${ROW}`}
        >
          <div className="flex min-w-0 flex-wrap items-baseline gap-x-2 gap-y-1">
            <h2 className="text-base font-semibold break-words md:text-sm">{peer.name}</h2>
            <Badges peer={peer} />
            {peer.proven_did ? (
              <span className={`w-full ${look.mono} ${look.muted}`}>
                proven {peer.proven_did} by {peer.proven_method}
              </span>
            ) : null}
          </div>
          <p className="mt-1 min-w-0 break-words md:mt-0">
            <span className={`${label} ${look.muted}`}>origin </span>
            <Origin origin={peer.origin} />
          </p>
            <p className="md:mt-0">
              <span className={`${label} ${look.muted}`}>runtime </span>
              {peer.runtime}
            </p>
            <p className="md:mt-0">
              <span className={`${label} ${look.muted}`}>bed </span>
              {peer.bed_id ?? "none"}
            </p>
            <p className="whitespace-nowrap md:mt-0">
              <span className={`${label} ${look.muted}`}>last seen </span>
              <LastSeen peer={peer} now={now} />
            </p>
            <p className={`${look.mono} ${look.muted} md:mt-0`}>
              <span className={`${label} font-sans`}>DID </span>
              <span className="md:hidden">{peer.fingerprint}</span>
              <span className="hidden md:inline" title={peer.fingerprint}>
                {peer.fingerprint.slice(0, 12)}…
              </span>
              <span className="sr-only">
                , bound <time dateTime={peer.bound_at}>{exactTime(peer.bound_at)}</time>
              </span>
            </p>
          </li>
        ))}
    </ul>
  );
}
