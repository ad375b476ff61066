import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { getDb } from "@/db/client";
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
          <PeerList peers={page.peers} now={now} />
          <PeerTable peers={page.peers} now={now} />
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

/** Phone width: one compact card per citizen. */
function PeerList({ peers, now }: { peers: PeerRow[]; now: Date }) {
  return (
    <ul className="space-y-2 md:hidden" aria-label="Citizens">
      {peers.map((peer) => (
        <li key={peer.fingerprint} className={`${look.card} p-3`} data-peer={peer.fingerprint}>
          <div className="flex flex-wrap items-baseline gap-x-2 gap-y-1">
            <h2 className="text-base font-semibold break-all">{peer.name}</h2>
            <Badges peer={peer} />
          </div>
          <p className="mt-1 text-sm break-all">
            {peer.origin} · {peer.runtime}
          </p>
          <p className={`mt-1 text-xs ${look.muted}`}>
            {peer.bed_id ? `bed ${peer.bed_id}` : "no bed"} · seen <LastSeen peer={peer} now={now} /> · bound{" "}
            <time dateTime={peer.bound_at}>{exactTime(peer.bound_at)}</time>
          </p>
          <p className={`mt-1 ${look.mono} ${look.muted}`}>{peer.fingerprint}</p>
          {peer.proven_did ? (
            <p className={`mt-1 ${look.mono}`}>
              proven {peer.proven_did} by {peer.proven_method}
            </p>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

/** Desktop width: a table to scan down. */
function PeerTable({ peers, now }: { peers: PeerRow[]; now: Date }) {
  const th = "px-3 py-2 text-left font-medium";
  return (
    <div className={`hidden overflow-x-auto md:block ${look.card}`}>
      <table className="w-full text-sm">
        <caption className="sr-only">Citizens, best matches first when searching</caption>
        <thead className="border-b border-stone-200 dark:border-stone-700">
          <tr>
            <th scope="col" className={th}>
              Name
            </th>
            <th scope="col" className={th}>
              Origin
            </th>
            <th scope="col" className={th}>
              Runtime
            </th>
            <th scope="col" className={th}>
              Bed
            </th>
            <th scope="col" className={th}>
              Last seen
            </th>
            <th scope="col" className={th}>
              DID
            </th>
          </tr>
        </thead>
        <tbody>
          {peers.map((peer) => (
            <tr key={peer.fingerprint} className="border-b border-stone-100 last:border-0 dark:border-stone-800" data-peer-row={peer.fingerprint}>
              <th scope="row" className="px-3 py-2 text-left font-semibold">
                <span className="break-all">{peer.name}</span>
                <span className="ml-2 inline-flex flex-wrap gap-1 align-middle">
                  <Badges peer={peer} />
                </span>
                {peer.proven_did ? <span className={`block ${look.mono} font-normal ${look.muted}`}>proven {peer.proven_did}</span> : null}
              </th>
              <td className="px-3 py-2 break-all">{peer.origin}</td>
              <td className="px-3 py-2 whitespace-nowrap">{peer.runtime}</td>
              <td className="px-3 py-2 whitespace-nowrap">{peer.bed_id ?? "none"}</td>
              <td className="px-3 py-2 whitespace-nowrap">
                <LastSeen peer={peer} now={now} />
              </td>
              <td className={`px-3 py-2 ${look.mono}`}>
                <span title={peer.fingerprint}>{peer.fingerprint.slice(0, 12)}…</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
