import type { HeldCheckpoint } from "@/lib/city/residency-log";
import { look } from "@/lib/plat/nav";

/** The residency log's latest signed checkpoint, who cosigned it, and how to verify it yourself. */
export function LogCheckpoint({
  checkpoint,
  vkey,
  witnesses,
}: {
  checkpoint: HeldCheckpoint;
  vkey: string;
  witnesses: Array<{ name: string; cosigned_size: number | null }>;
}) {
  const root = Buffer.from(checkpoint.root, "hex").toString("base64");
  return (
    <section aria-labelledby="checkpoint-heading" className={`${look.card} p-4`} data-checkpoint-size={checkpoint.size}>
      <h2 id="checkpoint-heading" className="text-lg font-semibold">
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
          <a className={look.link} href="/api/residency/log/checkpoint">
            /api/residency/log/checkpoint
          </a>{" "}
          (a C2SP signed note) and check its signature with the verifier key above (also in /city-card.json under <code>log</code>).
        </li>
        <li>
          Prove a row with <code>/api/residency/log/proof?seq=N</code>, that the log only grew with <code>/api/residency/log/consistency?from=M&amp;to=N</code>,
          or mirror it from the C2SP tiles under <code>/api/residency/log/tile/</code>.
        </li>
        <li>
          Or run <code>npm run verify-log -- &lt;this city&apos;s URL&gt;</code> from the city&apos;s repository: it checks the signature, recomputes the root
          from the tiles and checks consistency with the checkpoint it saw last time.
        </li>
      </ol>
    </section>
  );
}
