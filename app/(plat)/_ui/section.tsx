import { look } from "@/lib/plat/nav";

/** A titled part of a plat page: a landmark named by its own heading. */
export function Section({ id, title, children }: { id: string; title: React.ReactNode; children: React.ReactNode }) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id} className={look.h2}>
        {title}
      </h2>
      {children}
    </section>
  );
}
