import type { PublishedLogRow } from "@/lib/city/logs/residency-log";
import { exactTime, keyEventFacts } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { PeerDid } from "./peer-did";

const EVENT_LOOK: Record<string, string> = {
  admit: "bg-emerald-100 text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100",
  return: "bg-sky-100 text-sky-900 dark:bg-sky-900 dark:text-sky-100",
  exit: "bg-amber-100 text-amber-900 dark:bg-amber-900 dark:text-amber-100",
  export: "bg-stone-200 text-stone-900 dark:bg-stone-700 dark:text-stone-100",
};
/** Identity log events (and any other): one quiet look. */
const OTHER_EVENT_LOOK = "bg-violet-100 text-violet-900 dark:bg-violet-900 dark:text-violet-100";

/**
 * Log rows (the residency log's, or with `log="identity"` the identity log's): each one's
 * sequence, event, citizen (named and linked when the directory lists it), DID, time and hash, in
 * full, and for the identity log the public facts its row carries; each row is marked
 * `data-log-seq` or `data-identity-seq`. `broken` marks the row where a verification found the
 * chain broken, so a reader sees it where it stands. On one citizen's page the citizen goes without
 * saying (`citizen={false}`); `proof` is the log's proof door, linked from each row for its
 * inclusion proof.
 */
export function LogRows({
  rows,
  names,
  empty,
  broken,
  log = "residency",
  citizen = true,
  proof,
}: {
  rows: PublishedLogRow[];
  /** The directory's names of the rows' citizens (peerNames), by DID. */
  names: Map<string, string>;
  empty: string;
  broken?: { seq: number; reason: string } | null;
  log?: "residency" | "identity";
  citizen?: boolean;
  proof?: string;
}) {
  if (rows.length === 0) return <p className={`mt-4 ${look.card} p-4 ${look.muted}`}>{empty}</p>;
  return (
    <ol className={`mt-4 divide-y divide-stone-200 dark:divide-stone-700 ${look.card}`}>
      {rows.map((row) => (
        <li
          key={row.seq}
          className={`space-y-1 p-3 ${broken?.seq === row.seq ? "border-l-4 border-l-rose-600 dark:border-l-rose-400" : ""}`}
          data-log-seq={log === "residency" ? row.seq : undefined}
          data-identity-seq={log === "identity" ? row.seq : undefined}
          data-broken={broken?.seq === row.seq ? "" : undefined}
        >
          <p className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
            <span className="font-mono text-sm tabular-nums">#{row.seq}</span>
            <span className={`rounded px-2 py-0.5 text-xs font-medium ${EVENT_LOOK[row.event] ?? OTHER_EVENT_LOOK}`}>{row.event}</span>
            <time className={`text-sm ${look.muted}`} dateTime={row.at}>
              {exactTime(row.at)}
            </time>
            {broken?.seq === row.seq ? (
              <span className="rounded bg-rose-100 px-2 py-0.5 text-xs font-medium text-rose-900 dark:bg-rose-900 dark:text-rose-100">
                breaks the chain: {broken.reason}
              </span>
            ) : null}
            {proof ? (
              <a className={`${look.link} text-sm`} href={`${proof}?seq=${row.seq}`} data-proof>
                inclusion proof
              </a>
            ) : null}
          </p>
          <dl className="grid grid-cols-[4.5rem_minmax(0,1fr)] gap-x-2 gap-y-1 text-xs">
            {citizen ? (
              <>
                <dt className={look.muted}>citizen</dt>
                <dd className="min-w-0">
                  <PeerDid did={row.did} name={names.get(row.did)} />
                </dd>
              </>
            ) : null}
            {log === "identity" ? (
              <>
                <dt className={look.muted}>facts</dt>
                <dd className={look.mono}>{keyEventFacts(row)}</dd>
              </>
            ) : null}
            <dt className={look.muted}>hash</dt>
            <dd className={look.mono}>{row.hash}</dd>
          </dl>
        </li>
      ))}
    </ol>
  );
}
