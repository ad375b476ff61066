import { exactTime } from "@/lib/plat/format";
import { look } from "@/lib/plat/nav";

/** Says when a page's live data was read: it is read afresh on every visit. */
export function ReadAt({ now }: { now: Date }) {
  const iso = now.toISOString();
  return (
    <p className={`mt-2 text-sm ${look.muted}`} data-read-at={iso}>
      Read from the city at <time dateTime={iso}>{exactTime(iso)}</time>; reload for a fresh reading.
    </p>
  );
}
