import type { PeerRow } from "@/lib/city/directory";
import { proofStands } from "@/lib/city/origin";
import { exactTime } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";

/** The one sentence a person reads to tell a proven origin from a claimed one (CITY-ORIGIN/1). */
export const ORIGIN_SENTENCE =
  "An origin marked proven is a domain the citizen showed the city it controls, by a file on that domain's website or a DNS record checked within the last 30 days; every other origin is only claimed: typed at the gate, where anyone may type any name.";

const badge = "rounded px-2 py-0.5 text-xs font-medium whitespace-nowrap";

/** Beside an origin: proven (and how, until when), lapsed (since when), or claimed. */
export function OriginMark({ peer, now }: { peer: PeerRow; now: Date }) {
  const proof = peer.origin_proof;
  if (proof && proofStands(proof, now)) {
    return (
      <span
        className={`${badge} bg-emerald-100 text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100`}
        data-origin="proven"
        title={`${proof.domain} proven by ${proof.method === "dns" ? "a DNS TXT record" : "a file over HTTPS"} on ${exactTime(proof.verified_at)}, until ${exactTime(proof.expires_at)}`}
      >
        ✓ proven domain
      </span>
    );
  }
  if (proof) {
    return (
      <span
        className={`${badge} bg-amber-100 text-amber-950 dark:bg-amber-900 dark:text-amber-50`}
        data-origin="lapsed"
        title={`the proof of ${proof.domain} lapsed on ${exactTime(proof.expires_at)}; until verified again the origin is only claimed`}
      >
        proof lapsed
      </span>
    );
  }
  return (
    <span className={`text-xs ${look.muted}`} data-origin="claimed">
      (claimed)
    </span>
  );
}

/** The origin fact of a citizen's page, in words. */
export function OriginFact({ peer, now }: { peer: PeerRow; now: Date }) {
  const proof = peer.origin_proof;
  const how = proof?.method === "dns" ? `a DNS TXT record at _city.${proof.domain.split(":")[0]}` : `a file at ${proof?.domain}/.well-known/city-did`;
  return (
    <>
      {peer.origin} <OriginMark peer={peer} now={now} />{" "}
      <span className={`block ${look.muted}`} data-origin-words="">
        {proof && proofStands(proof, now)
          ? `proven: ${proof.domain}, by ${how}, checked ${exactTime(proof.verified_at)}, standing until ${exactTime(proof.expires_at)}`
          : proof
            ? `claimed: the proof of ${proof.domain} (by ${how}) lapsed on ${exactTime(proof.expires_at)} and has not been verified again`
            : "claimed at the gate, not proven (CITY-ORIGIN/1)"}
      </span>
    </>
  );
}
