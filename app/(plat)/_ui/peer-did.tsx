import { look } from "@/lib/plat/nav";

/** Where the plat shows one citizen: its own page. */
export function citizenHref(did: string): string {
  return `/peers/${did}`;
}

/**
 * A DID as a person reads it: the citizen's name linked to its page, then the DID
 * in full beneath. A DID the directory does not list (exported, or no citizen) is shown alone, and
 * says why it has no name.
 */
export function PeerDid({ did, name }: { did: string; name: string | undefined }) {
  return (
    <span className="block min-w-0">
      {name ? (
        <a className={`${look.link} font-sans text-sm font-medium break-words`} href={citizenHref(did)}>
          {name}
        </a>
      ) : (
        <span className={`font-sans text-sm ${look.muted}`}>not in the directory</span>
      )}
      <span className={`block ${look.mono} ${look.muted}`}>{did}</span>
    </span>
  );
}
