import type { PeerRow } from "@/lib/city/directory";
import type { PublishedLogRow } from "@/lib/city/logs/residency-log";
import { exactTime, timeAgo } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { OriginFact } from "./origin-mark";

/** A moment as the plat shows it: the exact UTC time, and how long ago in words. */
function When({ iso, now }: { iso: string; now: Date }) {
  return (
    <>
      <time dateTime={iso}>{exactTime(iso)}</time> <span className={look.muted}>({timeAgo(iso, now)})</span>
    </>
  );
}

/**
 * Where the citizen stands now, in words: present, away, or bound but not present (no bed, or not
 * seen for 24 hours), and since which residency log row.
 */
function Standing({ peer, since, now }: { peer: PeerRow; since: PublishedLogRow | null; now: Date }) {
  const state = peer.present ? "present" : peer.residency_status === "away" ? "away" : "not present";
  const why = peer.present
    ? "bound, holding a bed, seen within 24 hours"
    : peer.residency_status === "away"
      ? "it left the city; its locker, identity and history stay"
      : peer.bed_id === null
        ? "bound, but holding no bed"
        : "bound, but not seen within 24 hours";
  return (
    <>
      <span className="font-medium" data-standing={state}>
        {state}
      </span>{" "}
      <span className={look.muted}>({why})</span>
      {since ? (
        <span className="block">
          {peer.residency_status === "away" ? "away" : "bound"} since <When iso={since.at} now={now} /> (log row #{since.seq}, {since.event})
        </span>
      ) : null}
    </>
  );
}

/**
 * The citizen as the directory publishes it, and its tier: name, runtime, origin (proven, lapsed
 * or claimed, CITY-ORIGIN/1), tier, bed, where it stands and since when, first bound, last seen, and its proven key.
 */
export function CitizenFacts({ peer, tier, since, now }: { peer: PeerRow; tier: string; since: PublishedLogRow | null; now: Date }) {
  const facts: [string, React.ReactNode][] = [
    ["runtime", peer.runtime],
    ["origin", <OriginFact key="origin" peer={peer} now={now} />],
    ["tier", tier],
    ["bed", peer.bed_id ?? "none"],
    ["standing", <Standing key="standing" peer={peer} since={since} now={now} />],
    ["first bound", <When key="bound" iso={peer.bound_at} now={now} />],
    ["last seen", peer.last_seen_at ? <When key="seen" iso={peer.last_seen_at} now={now} /> : "never"],
    [
      "proven key",
      peer.proven_did ? (
        <span className={look.mono}>
          {peer.proven_did} <span className="font-sans">by {peer.proven_method}</span>
        </span>
      ) : tier === "proven" ? (
        "proven, its key published only while it is bound"
      ) : (
        "none (it has not proven a key, CITY-PROVE/1)"
      ),
    ],
    [
      "DID",
      <span key="did" className={look.mono}>
        {peer.fingerprint}
      </span>,
    ],
  ];
  return (
    <dl className={`${look.card} grid grid-cols-1 gap-x-4 gap-y-1 p-4 text-sm sm:grid-cols-[8rem_minmax(0,1fr)]`} data-citizen={peer.fingerprint}>
      {facts.map(([term, value]) => (
        <div key={term} className="contents" data-fact={term}>
          <dt className={`${look.muted} mt-2 sm:mt-0`}>{term}</dt>
          <dd className="min-w-0 break-words">{value}</dd>
        </div>
      ))}
    </dl>
  );
}
