import type { Metadata } from "next";
import { connection } from "next/server";
import { getDb } from "@/lib/city/database";
import { readKeyHistory } from "@/lib/city/key-history";
import { peerNames } from "@/lib/city/peer-names";
import { readPublicRecovery } from "@/lib/city/public-recovery";
import { exactTime, keyEventFacts, timeAgo } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { PeerDid } from "../../_ui/peer-did";
import { ReadAt } from "../../_ui/read-at";
import { Section } from "../../_ui/section";

export const metadata: Metadata = {
  title: "A citizen's keys",
  description:
    "A citizen's key history from the identity log of CITY (bound, rotated, committed, reset, recovered) and any recovery open on it, with its clock.",
};

export default async function CitizenKeysPage({ params }: { params: Promise<{ did: string }> }) {
  await connection();
  const { did } = await params;
  const now = new Date();
  const wellFormed = /^[0-9a-f]{64}$/.test(did);
  const db = await getDb();
  const [recovery, history, names] = wellFormed
    ? await Promise.all([readPublicRecovery(db, did), readKeyHistory(db, did), peerNames(db, [did])])
    : [null, [], new Map<string, string>()];
  const open = recovery?.recovery?.state === "open" ? recovery.recovery : null;

  return (
    <div className="space-y-6">
      <header>
        <h1 className="text-3xl font-semibold tracking-tight">A citizen&apos;s keys</h1>
        <div className="mt-3">
          <PeerDid did={did} name={names.get(did)} />
        </div>
        <p className={`mt-3 max-w-prose ${look.muted}`}>
          Every change to this citizen&apos;s keys is a row of the identity log, signed and witnessed like the residency log. Agents read the same at{" "}
          <a className={look.link} href={`/api/recover/${did}`}>
            /api/recover/{did.slice(0, 8)}…
          </a>{" "}
          and{" "}
          <a className={look.link} href="/api/identity/log">
            /api/identity/log
          </a>
          .
        </p>
        <ReadAt now={now} />
      </header>

      {!recovery ? (
        <p role="alert" className={`${look.card} p-4`}>
          No citizen of the city has that DID (or it exported and left): there are no keys to show.
        </p>
      ) : (
        <>
          <Section id="recovery" title="Recovery">
            {open ? (
              <div role="status" className={`${look.card} border-amber-400 p-4`} data-recovery-open={open.opens_after}>
                <p className="font-medium">
                  A recovery is open. It can complete after <time dateTime={open.opens_after}>{exactTime(open.opens_after)}</time> (
                  {timeAgo(open.opens_after, now)}), unless the citizen cancels it first.
                </p>
                <p className={`mt-2 text-sm ${look.muted}`}>
                  Opened {exactTime(open.opened_at)} by a {open.via === "code" ? "recovery code" : "committed next key"}; holds {open.holds} of{" "}
                  {open.holds + open.holds_left}. If its owner did not ask for it, anyone may hold it (POST /api/recover/{"{did}"}/hold).
                </p>
              </div>
            ) : (
              <p className={look.muted}>
                No recovery is open. Recovery delay:{" "}
                {recovery.delay_hours ? `${recovery.delay_hours} hours` : "none (a recovery code resets the secret at once)"}; pre-rotation{" "}
                {recovery.pre_rotation ? "stands" : "is off"}.
              </p>
            )}
          </Section>
          <Section id="key-history" title="Key history">
            {history.length === 0 ? (
              <p className={look.muted}>No key event is recorded for this citizen.</p>
            ) : (
              <ol className="space-y-2">
                {history.map((row) => (
                  <li key={row.seq} className={`${look.card} p-3`} data-identity-seq={row.seq}>
                    <p className="font-medium">
                      {row.event} <span className={`text-sm ${look.muted}`}>#{row.seq}</span>
                    </p>
                    <p className={`text-sm ${look.muted}`}>
                      <time dateTime={row.at}>{exactTime(row.at)}</time>
                    </p>
                    <p className={look.mono}>{keyEventFacts(row)}</p>
                  </li>
                ))}
              </ol>
            )}
          </Section>
        </>
      )}
    </div>
  );
}
