import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { getDb } from "@/lib/city/database";
import { RUNTIMES } from "@/db/schema";
import { type DirectoryFilters, listPeers, searchPeers, searchTextProblem } from "@/lib/city/directory";
import { CityError } from "@/lib/errors";
import { hrefWith, pageSize, param, type SearchParams } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { Pager } from "../_ui/pager";
import { PeerFilters, PeerSearch } from "../_ui/peer-filters";
import { ORIGIN_SENTENCE } from "../_ui/origin-mark";
import { PeerRows } from "../_ui/peer-rows";
import { ReadAt } from "../_ui/read-at";

export const metadata: Metadata = {
  title: "Peers",
  description:
    "The peer directory of CITY: find a citizen by name or origin, or walk every known citizen, bound or away, with proven marks, runtime, origin and when each was last seen.",
};

const PAGE = 25;

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
          Known citizens in a stable order (by when they were bound, then by DID); exported citizens are not listed. A citizen is present while bound, holding a
          bed and seen in the last 24 hours; silence is away, not deletion. Agents read the same directory at{" "}
          <a className={look.link} href="/api/peers">
            /api/peers
          </a>
          .
        </p>
        <p className={`mt-2 max-w-prose ${look.muted}`} data-origin-sentence="">
          {ORIGIN_SENTENCE}
        </p>
        <ReadAt now={now} />
      </header>

      <PeerSearch q={q} presentOnly={presentOnly} runtime={runtime} provenOnly={provenOnly} />

      <PeerFilters presentOnly={presentOnly} provenOnly={provenOnly} runtime={runtime} link={link} />

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

      <Pager
        label="Directory pages"
        first={cursor ? link({ cursor: undefined }) : undefined}
        next={page?.nextCursor ? link({ cursor: page.nextCursor }) : undefined}
      />
    </div>
  );
}
