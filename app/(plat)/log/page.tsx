import type { Metadata } from "next";
import { connection } from "next/server";
import { getDb } from "@/lib/city/database";
import { peerNames } from "@/lib/city/directory";
import { identityLog } from "@/lib/city/logs/identity-log";
import { configuredWitnesses, currentCheckpoint, logSigner, readLogPage, verifyHashChain, witnessStates } from "@/lib/city/logs/residency-log";
import { LogCheckpoint, type LogPlace } from "../_ui/log-checkpoint";
import { hrefWith, pageSize, param, type SearchParams } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { LogRows } from "../_ui/log-rows";
import { Pager } from "../_ui/pager";
import { ReadAt } from "../_ui/read-at";
import { Section } from "../_ui/section";

export const metadata: Metadata = {
  title: "Residency log",
  description:
    "The append-only residency log of CITY (admit, exit, return, export), oldest first, each row hash-chained to the one before, with the chain verified; and the identity log of every key event, with its latest checkpoint.",
};

const PAGE = 50;
/** The identity log's newest rows the page shows; the whole log is at /api/identity/log. */
const IDENTITY_ROWS = 20;
const IDENTITY_LOG_PLACE: LogPlace = { doors: "/api/identity/log", cardField: "identity_log", id: "identity-checkpoint" };

export default async function LogPage({ searchParams }: { searchParams: SearchParams }) {
  await connection();
  const query = await searchParams;
  const now = new Date();
  const limit = pageSize(query.limit, PAGE, 100);
  const afterParam = Number(param(query.after));
  const after = Number.isSafeInteger(afterParam) && afterParam > 0 ? afterParam : 0;
  const db = await getDb();
  const [page, chain, checkpoint, signer, witnesses, identityRows, identityCheckpoint, identitySigner, identityWitnesses] = await Promise.all([
    readLogPage(db, after, limit),
    verifyHashChain(db),
    currentCheckpoint(db, now),
    logSigner(db),
    witnessStates(db),
    identityLog.readLatestRows(db, IDENTITY_ROWS),
    identityLog.currentCheckpoint(db, now),
    identityLog.logSigner(db),
    identityLog.witnessStates(db),
  ]);
  const names = await peerNames(
    db,
    [...page.rows, ...identityRows].map((r) => r.did),
  );
  const link = (from: number | undefined) => hrefWith("/log", { after: from, limit: limit === PAGE ? undefined : limit });
  // An intact chain numbers its rows 1..n without gaps, so the last page starts at a known seq.
  const lastAfter = chain.intact && chain.rows_checked > 0 ? Math.floor((chain.rows_checked - 1) / limit) * limit : undefined;

  return (
    <div className="space-y-6">
      <header>
        <h1 className="text-3xl font-semibold tracking-tight">Residency log</h1>
        <p className={`mt-3 max-w-prose ${look.muted}`}>
          Every admit, exit, return and export, oldest first. The log is append-only: each row&apos;s hash is the sha256 of its canonical JSON, which includes
          the hash of the row before, so a changed or missing row breaks the chain. Agents read it at{" "}
          <a className={look.link} href="/api/residency/log">
            /api/residency/log
          </a>{" "}
          and check it at{" "}
          <a className={look.link} href="/api/residency/log/verify">
            /api/residency/log/verify
          </a>
          .
        </p>
        <ReadAt now={now} />
      </header>

      <section aria-labelledby="chain-heading" className={`${look.card} p-4`} data-chain={chain.intact ? "intact" : "broken"}>
        <h2 id="chain-heading" className="text-lg font-semibold">
          Chain verification: {chain.intact ? "the chain holds" : "the chain is broken"}
        </h2>
        <p className={`mt-1 text-sm ${look.muted}`}>
          {chain.intact
            ? chain.rows_checked === 0
              ? "No rows yet: no citizens yet, so there is nothing to check."
              : `All ${chain.rows_checked} rows recomputed just now; each names the hash of the row before it.`
            : `${chain.rows_checked} ${chain.rows_checked === 1 ? "row holds" : "rows hold"}; row #${chain.first_broken?.seq} breaks it: ${chain.first_broken?.reason}.`}
        </p>
        {chain.first_broken ? (
          <p className="mt-2 text-sm">
            <a className={look.link} href={link(chain.first_broken.seq - 1 || undefined)} data-broken-link>
              Show row #{chain.first_broken.seq}
            </a>
          </p>
        ) : null}
        <p className="mt-2 grid grid-cols-[6rem_minmax(0,1fr)] gap-x-2 text-xs">
          {/* On a broken chain the hash shown is the last row's that holds, not the head's. */}
          <span className={look.muted}>{chain.intact ? "head hash" : "last hash that holds"}</span>
          <span className={look.mono}>{chain.head_hash}</span>
        </p>
      </section>

      <LogCheckpoint checkpoint={checkpoint} vkey={signer.vkey} witnesses={witnesses} />

      <Section id="rows-heading" title={page.rows.length ? `Rows #${page.rows[0]!.seq} to #${page.rows[page.rows.length - 1]!.seq}` : "Rows"}>
        <LogRows
          rows={page.rows}
          names={names}
          broken={chain.first_broken}
          empty={after > 0 ? "No rows after this point." : "No citizens yet: the residency log is empty."}
        />
        <Pager
          label="Log pages"
          first={after > 0 ? link(undefined) : undefined}
          next={page.nextAfter !== null ? link(page.nextAfter) : undefined}
          last={lastAfter !== undefined && lastAfter > after ? link(lastAfter || undefined) : undefined}
        />
      </Section>

      <section aria-labelledby="identity-log-heading" className="space-y-6 border-t border-stone-200 pt-6 dark:border-stone-700" data-identity-log>
        <header>
          <h2 id="identity-log-heading" className="text-2xl font-semibold tracking-tight">
            Identity log
          </h2>
          <p className={`mt-3 max-w-prose ${look.muted}`}>
            Every change to a citizen&apos;s keys: a controller bound or rotated, next keys committed, a secret reset, a recovery opened, held, cancelled or
            completed, a recovery delay set. A second transparency log in the same formats, signed with the same key
            {configuredWitnesses().length ? " and cosigned by the same witnesses" : ""}, so nobody&apos;s identity changes out of sight. Agents read it at{" "}
            <a className={look.link} href="/api/identity/log">
              /api/identity/log
            </a>
            ; <code>npm run watch-keys -- &lt;this city&apos;s URL&gt; &lt;did&gt;</code> prints one citizen&apos;s key events, verified, as they happen.
          </p>
        </header>

        <LogCheckpoint checkpoint={identityCheckpoint} vkey={identitySigner.vkey} witnesses={identityWitnesses} place={IDENTITY_LOG_PLACE} />

        <Section
          id="identity-rows-heading"
          title={identityRows.length ? `Latest key events, newest first (#${identityRows[0]!.seq} down)` : "Latest key events"}
        >
          <LogRows rows={identityRows} names={names} log="identity" empty="No key events yet: no citizen has bound a key." />
        </Section>
      </section>
    </div>
  );
}
