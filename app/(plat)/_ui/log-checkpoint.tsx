import type { HeldCheckpoint } from "@/lib/city/logs/residency-log";
import { look } from "@/lib/plat/nav";

/** Where a log's doors are and how the card names it: the residency log's, or the identity log's. */
export interface LogPlace {
  /** The prefix of its doors: /api/residency/log, /api/identity/log. */
  doors: string;
  /** Its field in /city-card.json: log, identity_log. */
  cardField: string;
  /** Its id on the page (its heading's is `${id}-heading`). */
  id: string;
}

export const RESIDENCY_LOG_PLACE: LogPlace = { doors: "/api/residency/log", cardField: "log", id: "checkpoint" };

/** A log's latest signed checkpoint, who cosigned it, and how to verify it yourself. */
export function LogCheckpoint({
  checkpoint,
  vkey,
  witnesses,
  place = RESIDENCY_LOG_PLACE,
}: {
  checkpoint: HeldCheckpoint;
  vkey: string;
  witnesses: Array<{ name: string; cosigned_size: number | null }>;
  place?: LogPlace;
}) {
  const root = Buffer.from(checkpoint.root, "hex").toString("base64");
  const { doors } = place;
  return (
    <section aria-labelledby={`${place.id}-heading`} className={`${look.card} p-4`} data-checkpoint-size={checkpoint.size} data-log={place.cardField}>
      <h2 id={`${place.id}-heading`} className="text-lg font-semibold">
        Latest checkpoint: {checkpoint.size} rows
      </h2>
      <p className={`mt-1 text-sm ${look.muted}`}>
        The log is also a transparency log: an RFC 9162 Merkle tree over its rows, and a checkpoint signed with the city&apos;s key (the one of
        /.well-known/jwks.json) at every row. Anyone can check any row&apos;s inclusion and that the log only grew, from the key alone.
      </p>
      <p className="mt-2 grid grid-cols-[8rem_minmax(0,1fr)] gap-x-2 gap-y-1 text-xs">
        <span className={look.muted}>size</span>
        <span className={look.mono}>{checkpoint.size}</span>
        <span className={look.muted}>root (base64)</span>
        <span className={look.mono}>{root}</span>
        <span className={look.muted}>signed</span>
        <span className={look.mono}>{checkpoint.signedAt.toISOString()}</span>
        <span className={look.muted}>verifier key</span>
        <span className={`${look.mono} break-all`}>{vkey}</span>
        <span className={look.muted}>cosigned by</span>
        <span>
          {checkpoint.cosignatures.length
            ? checkpoint.cosignatures.map((c) => `${c.witness} (${c.cosignedAt.toISOString()})`).join(", ")
            : witnesses.length
              ? `no witness has cosigned this size yet (${witnesses.map((w) => `${w.name}: ${w.cosigned_size ?? "never"}`).join(", ")})`
              : "no witnesses are configured"}
        </span>
      </p>
      <h3 className="mt-3 text-sm font-semibold">Verify it yourself</h3>
      <ol className={`mt-1 list-decimal pl-5 text-sm ${look.muted}`}>
        <li>
          Fetch the checkpoint at{" "}
          <a className={look.link} href={`${doors}/checkpoint`}>
            {doors}/checkpoint
          </a>{" "}
          (a C2SP signed note) and check its signature with the verifier key above (also in /city-card.json under <code>{place.cardField}</code>).
        </li>
        <li>
          Prove a row with <code>{doors}/proof?seq=N</code>, that the log only grew with <code>{doors}/consistency?from=M&amp;to=N</code>, or mirror it from the
          C2SP tiles under <code>{doors}/tile/</code>.
        </li>
        <li>
          Or run <code>npm run verify-log -- &lt;this city&apos;s URL&gt;</code> from the city&apos;s repository: it checks the signature, recomputes the root
          from the tiles and checks consistency with the checkpoint it saw last time, for both logs the card lists.
        </li>
      </ol>
    </section>
  );
}
