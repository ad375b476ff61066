"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { isCurrentPage, look, PLAT_PAGES } from "@/lib/plat/nav";

/**
 * The header's page links, the current one marked (aria-current="page", and bold for the eye). A
 * client component only to know the path: rendered on the server like the rest (the plat needs no
 * JavaScript), and kept right when a visitor with JavaScript moves between pages without a reload.
 */
export function PlatNav() {
  const path = usePathname();
  return PLAT_PAGES.map((page) => {
    const current = isCurrentPage(page.href, path);
    return (
      <Link
        key={page.href}
        href={page.href}
        aria-current={current ? "page" : undefined}
        className={`text-sm hover:text-stone-900 hover:underline dark:hover:text-white ${
          current ? "font-semibold text-stone-900 underline decoration-2 underline-offset-4 dark:text-white" : look.muted
        }`}
      >
        {page.label}
      </Link>
    );
  });
}
