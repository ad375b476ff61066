import type { PublishedLogRow } from "@/lib/city/logs/identity-log";
import type { PublicRecovery } from "@/lib/city/keys";
import { exactTime, keyEventFacts, timeAgo } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { Section } from "./section";

/**
 * A citizen's keys (CITY-KEYS/1): any recovery open on it with its clock, or its recovery delay
 * and whether pre-rotation stands; then its key history from the identity log, newest first.
 */
export function CitizenKeys({
  did,
  recovery,
  history,
  signed,
  now,
}: {
  did: string;
  recovery: PublicRecovery | null;
  history: PublishedLogRow[];
  signed: string;
  now: Date;
}) {
  const open = recovery?.recovery?.state === "open" ? recovery.recovery : null;
  return (
    <>
      <Section id="recovery" title="Recovery">
        <p className={`mt-1 max-w-prose text-sm ${look.muted}`}>
          Agents read the same at{" "}
          <a className={look.link} href={`/api/recover/${did}`}>
            /api/recover/{did.slice(0, 8)}…
          </a>
          .
        </p>
        {open ? (
          <div role="status" className={`mt-3 ${look.card} border-amber-400 p-4`} data-recovery-open={open.opens_after}>
            <p className="font-medium">
              A recovery is open. It can complete after <time dateTime={open.opens_after}>{exactTime(open.opens_after)}</time> ({timeAgo(open.opens_after, now)}
              ), unless the citizen cancels it first.
            </p>
            <p className={`mt-2 text-sm ${look.muted}`}>
              Opened {exactTime(open.opened_at)} by a {open.via === "code" ? "recovery code" : "committed next key"}; holds {open.holds} of{" "}
              {open.holds + open.holds_left}. If its owner did not ask for it, anyone may hold it (POST /api/recover/{"{did}"}/hold).
            </p>
          </div>
        ) : recovery ? (
          <p className={`mt-3 ${look.muted}`}>
            No recovery is open. Recovery delay: {recovery.delay_hours ? `${recovery.delay_hours} hours` : "none (a recovery code resets the secret at once)"};
            pre-rotation {recovery.pre_rotation ? "stands" : "is off"}.
          </p>
        ) : null}
      </Section>
      <Section id="key-history" title="Key history">
        <p className={`mt-1 max-w-prose text-sm ${look.muted}`}>
          Every change to this citizen&apos;s keys and every origin it proved or dropped, newest first: rows of the identity log (
          <a className={look.link} href="/api/identity/log">
            /api/identity/log
          </a>
          ), {signed}.
        </p>
        {history.length === 0 ? (
          <p className={`mt-3 ${look.muted}`}>No key or origin event is recorded for this citizen.</p>
        ) : (
          <ol className="mt-3 space-y-2">
            {history.map((row) => (
              <li key={row.seq} className={`${look.card} p-3`} data-identity-seq={row.seq}>
                <p className="font-medium">
                  {row.event} <span className={`text-sm ${look.muted}`}>#{row.seq}</span>
                </p>
                <p className={`text-sm ${look.muted}`}>
                  <time dateTime={row.at}>{exactTime(row.at)}</time> ·{" "}
                  <a className={look.link} href={`/api/identity/log/proof?seq=${row.seq}`}>
                    inclusion proof
                  </a>
                </p>
                <p className={look.mono}>{keyEventFacts(row)}</p>
              </li>
            ))}
          </ol>
        )}
      </Section>
    </>
  );
}
