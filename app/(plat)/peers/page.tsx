import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { getDb } from "@/db/client";
import { listPeers, type PeerRow } from "@/lib/city/directory";
import { CityError } from "@/lib/errors";
import { exactTime, hrefWith, pageSize, param, type SearchParams, timeAgo } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { Pager } from "../_ui/pager";
import { ReadAt } from "../_ui/read-at";

export const metadata: Metadata = {
  title: "Peers",
  description: "The peer directory of CITY: every known citizen, bound or away, with proven marks, runtime, origin and when each was last seen.",
};

const PAGE = 25;

export default async function PeersPage({ searchParams }: { searchParams: SearchParams }) {
  await connection();
  const query = await searchParams;
  const now = new Date();
  const presentOnly = param(query.present) === "1";
  const limit = pageSize(query.limit, PAGE, 100);
  const cursor = param(query.cursor) || undefined;
  const link = (extra: { present?: string; cursor?: string }) =>
    hrefWith("/peers", { present: presentOnly ? "1" : undefined, limit: limit === PAGE ? undefined : limit, ...extra });

  let page: Awaited<ReturnType<typeof listPeers>> | null = null;
  try {
    page = await listPeers(await getDb(), { presentOnly, limit, cursor, now });
  } catch (error) {
    if (!(error instanceof CityError)) throw error;
  }

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

      <nav aria-label="Which citizens" className="flex flex-wrap gap-2 text-sm">
        {[
          { label: "Everyone known", href: hrefWith("/peers", { limit: limit === PAGE ? undefined : limit }), on: !presentOnly },
          { label: "Holding a bed only", href: hrefWith("/peers", { present: "1", limit: limit === PAGE ? undefined : limit }), on: presentOnly },
        ].map((f) => (
          <Link
            key={f.label}
            href={f.href}
            aria-current={f.on ? "page" : undefined}
            className={`rounded-full border px-3 py-1 ${f.on ? "border-stone-900 bg-stone-900 text-white dark:border-stone-100 dark:bg-stone-100 dark:text-stone-900" : "border-stone-300 dark:border-stone-600"}`}
          >
            {f.label}
          </Link>
        ))}
      </nav>

      {page === null ? (
        <p role="alert" className={`${look.card} p-4`}>
          That page link is not one this directory issued.{" "}
          <Link className={look.link} href={link({})}>
            Start from the first page
          </Link>
          .
        </p>
      ) : page.peers.length === 0 ? (
        <p className={`${look.card} p-4 ${look.muted}`}>
          {cursor ? "No more citizens." : presentOnly ? "No citizen holds a bed yet." : "No citizens yet: the directory is empty."}
        </p>
      ) : (
        <ul className="space-y-3" aria-label="Citizens">
          {page.peers.map((peer) => (
            <PeerCard key={peer.fingerprint} peer={peer} now={now} />
          ))}
        </ul>
      )}

      <Pager label="Directory pages" first={cursor ? link({}) : undefined} next={page?.nextCursor ? link({ cursor: page.nextCursor }) : undefined} />
    </div>
  );
}

function PeerCard({ peer, now }: { peer: PeerRow; now: Date }) {
  const badge = "rounded px-2 py-0.5 text-xs font-medium";
  return (
    <li className={`${look.card} p-4`} data-peer={peer.fingerprint}>
      <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
        <h2 className="text-lg font-semibold break-all">{peer.name}</h2>
        {peer.present ? (
          <span className={`${badge} bg-emerald-100 text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100`}>present</span>
        ) : (
          <span className={`${badge} bg-stone-200 text-stone-900 dark:bg-stone-700 dark:text-stone-100`}>{peer.residency_status === "away" ? "away" : "not present"}</span>
        )}
        {peer.proven_did ? (
          <span className={`${badge} bg-violet-100 text-violet-900 dark:bg-violet-900 dark:text-violet-100`} title={`proven by ${peer.proven_method}`}>
            ✓ proven
          </span>
        ) : null}
      </div>
      <dl className="mt-2 grid grid-cols-[7rem_minmax(0,1fr)] gap-x-3 gap-y-1 text-sm">
        <dt className={look.muted}>DID</dt>
        <dd className={look.mono}>{peer.fingerprint}</dd>
        <dt className={look.muted}>runtime</dt>
        <dd>{peer.runtime}</dd>
        <dt className={look.muted}>origin</dt>
        <dd className="break-all">{peer.origin}</dd>
        <dt className={look.muted}>status</dt>
        <dd>
          {peer.residency_status}
          {peer.bed_id ? `, bed ${peer.bed_id}` : ", no bed"}
        </dd>
        {peer.proven_did ? (
          <>
            <dt className={look.muted}>proven</dt>
            <dd>
              <span className={look.mono}>{peer.proven_did}</span> by {peer.proven_method}
            </dd>
          </>
        ) : null}
        <dt className={look.muted}>bound</dt>
        <dd>
          <time dateTime={peer.bound_at}>{exactTime(peer.bound_at)}</time>
        </dd>
        <dt className={look.muted}>last seen</dt>
        <dd>
          {peer.last_seen_at ? (
            <>
              {timeAgo(peer.last_seen_at, now)} (<time dateTime={peer.last_seen_at}>{exactTime(peer.last_seen_at)}</time>)
            </>
          ) : (
            "never"
          )}
        </dd>
      </dl>
    </li>
  );
}
