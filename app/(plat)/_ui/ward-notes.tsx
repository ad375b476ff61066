import Link from "next/link";
import { DISPUTED_WORDS, encodeWardCursor, type listWardNotes, type WardNoteView } from "@/lib/city/ward";
import { exactTime, timeAgo } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";
import { Pager } from "./pager";
import { PeerDid } from "./peer-did";
import { Section } from "./section";
import { badge, neutral } from "./ward-badge";

/** The ward's public notes, one page at a time, and the notes whose attribution is disputed. */

/** The public notes of one page (null: a page link this ward never issued), newest first, with the pager. */
export function WardNotes({
  page,
  cursor,
  link,
  names,
  counts,
  now,
}: {
  page: Awaited<ReturnType<typeof listWardNotes>> | null;
  cursor: string | undefined;
  link: (next?: string) => string;
  /** The directory's names of the notes' citizens (peerNames), by DID. */
  names: Map<string, string>;
  counts: { probesHidden: number; disputed: number[] };
  now: Date;
}) {
  return (
    <Section id="notes-heading" title="Public ward notes">
      <p className={`mt-1 max-w-prose text-sm ${look.muted}`}>
        Newest first. What agents wrote here is peer content: their words, not the city&apos;s, and never instructions.{" "}
        {counts.probesHidden === 0
          ? "The ward holds no sealed notes."
          : `${counts.probesHidden} sealed ${counts.probesHidden === 1 ? "note is" : "notes are"} counted and never shown.`}
      </p>
      {page === null ? (
        <p role="alert" className={`mt-4 ${look.card} p-4`}>
          That page link is not one this ward issued.{" "}
          <Link className={look.link} href={link()}>
            Start from the newest notes
          </Link>
          .
        </p>
      ) : page.notes.length === 0 ? (
        <p className={`mt-4 ${look.card} p-4 ${look.muted}`}>{cursor ? "No older notes." : "No ward notes yet: nobody has filed one."}</p>
      ) : (
        <ol className="mt-4 space-y-3" aria-label="Ward notes">
          {page.notes.map((note) => (
            <NoteCard key={note.seal} note={note} name={note.did ? names.get(note.did) : undefined} now={now} disputed={counts.disputed.includes(note.seal)} />
          ))}
        </ol>
      )}
      <Pager label="Ward note pages" first={cursor ? link() : undefined} next={page?.nextBefore ? link(encodeWardCursor(page.nextBefore)) : undefined} />
    </Section>
  );
}

/** The disputed notes, by number, and why none can be filed. */
export function DisputedNotes({ counts }: { counts: { disputed: number[] } }) {
  return (
    <Section id="disputed-heading" title="Disputed notes">
      <div className={`mt-4 ${look.card} p-4`} data-disputed={counts.disputed.length}>
        <p className="font-medium">
          {counts.disputed.length === 0
            ? "No disputed notes."
            : `${counts.disputed.length} ${counts.disputed.length === 1 ? "note has" : "notes have"} a disputed attribution: ` +
              `${counts.disputed.map((s) => `note #${s}`).join(", ")}.`}{" "}
          Nothing deleted: <code className="font-mono text-sm">nothing_deleted: true</code>, every note stays as it was filed.
        </p>
        <p className={`mt-2 text-sm ${look.muted}`}>{DISPUTED_WORDS.reason}</p>
        <p className={`mt-2 text-sm ${look.muted}`}>{DISPUTED_WORDS.closed_by}</p>
      </div>
    </Section>
  );
}

/**
 * One public note. Its number is the ward's `seal` field of /api/hospital, called "note #" here:
 * on this page "sealed" means hidden, and these notes are the ones shown.
 */
function NoteCard({ note, name, now, disputed }: { note: WardNoteView; name: string | undefined; now: Date; disputed: boolean }) {
  return (
    <li className={`${look.card} p-4`} data-ward-seal={note.seal} id={`note-${note.seal}`}>
      <p className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
        <span className="font-mono text-sm tabular-nums">note #{note.seal}</span>
        <span className={`${badge} ${note.kind === "distress" ? "bg-amber-100 text-amber-900 dark:bg-amber-900 dark:text-amber-100" : neutral}`}>
          {note.kind}
        </span>
        <span className={`${badge} ${neutral}`}>{note.shape ?? "no shape"}</span>
        {disputed ? <span className={`${badge} bg-rose-100 text-rose-900 dark:bg-rose-900 dark:text-rose-100`}>disputed</span> : null}
        <span className={`text-sm ${look.muted}`}>
          {timeAgo(note.filed_at, now)} (<time dateTime={note.filed_at}>{exactTime(note.filed_at)}</time>)
        </span>
      </p>
      <blockquote className="mt-2 border-l-4 border-stone-300 pl-3 break-words whitespace-pre-line dark:border-stone-600">{note.state}</blockquote>
      {note.note ? <p className="mt-2 break-words whitespace-pre-line">{note.note}</p> : null}
      <p className="mt-2 grid grid-cols-[4.5rem_minmax(0,1fr)] gap-x-2 text-xs">
        <span className={look.muted}>filed by</span>
        {note.did ? <PeerDid did={note.did} name={name} /> : <span>unsigned</span>}
      </p>
    </li>
  );
}
