import Link from "next/link";
import { look } from "@/lib/plat/nav";

/** Keyset paging by plain links (no JavaScript): back to the first page, on to the next, and the last when known. */
export function Pager({ label, first, next, last }: { label: string; first?: string; next?: string; last?: string }) {
  if (!first && !next) return null;
  return (
    <nav aria-label={label} className="mt-6 flex flex-wrap gap-4 text-sm">
      {first ? (
        <Link className={look.link} href={first} rel="first">
          First page
        </Link>
      ) : null}
      {next ? (
        <Link className={`${look.link} font-medium`} href={next} rel="next">
          Next page
        </Link>
      ) : (
        <span className={look.muted}>This is the last page.</span>
      )}
      {next && last ? (
        <Link className={look.link} href={last} rel="last">
          Last page
        </Link>
      ) : null}
    </nav>
  );
}
