import type { PeerRow } from "@/lib/city/directory";
import { exactTime, timeAgo } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { OriginMark } from "./origin-mark";
import { citizenHref } from "./peer-did";

/** The directory's rows as the peers page lists them: one compact list, a card per citizen on a phone, columns at desktop width. */

const badge = "rounded px-2 py-0.5 text-xs font-medium whitespace-nowrap";

function Badges({ peer }: { peer: PeerRow }) {
  return (
    <>
      {peer.present ? (
        <span className={`${badge} bg-emerald-100 text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100`}>present</span>
      ) : (
        <span className={`${badge} bg-stone-200 text-stone-900 dark:bg-stone-700 dark:text-stone-100`}>
          {peer.residency_status === "away" ? "away" : "not present"}
        </span>
      )}
      {peer.proven_did ? <span className={`${badge} bg-violet-100 text-violet-900 dark:bg-violet-900 dark:text-violet-100`}>✓ proven</span> : null}
      {/* CITY-SIG/1: it may sign its requests with its controller key; the keyid's first characters. */}
      {peer.key_thumbprint ? (
        <span
          className={`${badge} ${look.mono} bg-sky-100 text-sky-900 dark:bg-sky-900 dark:text-sky-100`}
          title={`signs its requests with key ${peer.key_thumbprint}`}
          data-key-thumbprint={peer.key_thumbprint}
        >
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
export function PeerRows({ peers, now }: { peers: PeerRow[]; now: Date }) {
  const label = "text-xs md:sr-only";
  return (
    <ul
      className={
        "space-y-2 md:space-y-0 md:rounded-lg md:border md:border-stone-200 md:bg-white md:px-3 md:dark:border-stone-700 md:dark:bg-stone-900 " + COLUMNS
      }
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
          className={
            `${look.card} scroll-mt-4 p-3 text-sm target:ring-2 target:ring-violet-600 md:rounded-none md:border-0 md:border-b md:border-stone-100 ` +
            `md:bg-transparent md:px-0 md:py-2 md:last:border-0 md:dark:border-stone-800 dark:target:ring-violet-300 ${ROW}`
          }
        >
          <div className="flex min-w-0 flex-wrap items-baseline gap-x-2 gap-y-1">
            <h2 className="text-base font-semibold break-words md:text-sm">
              {/* Its page: what the directory says of it, its residency log rows and its keys (CITY-KEYS/1). */}
              <a className={look.link} href={citizenHref(peer.fingerprint)}>
                {peer.name}
              </a>
            </h2>
            <Badges peer={peer} />
            {peer.proven_did ? (
              <span className={`w-full ${look.mono} ${look.muted}`}>
                proven {peer.proven_did} by {peer.proven_method}
              </span>
            ) : null}
          </div>
          <p className="mt-1 min-w-0 break-words md:mt-0">
            <span className={`${label} ${look.muted}`}>origin </span>
            <Origin origin={peer.origin} /> <OriginMark peer={peer} now={now} />
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
