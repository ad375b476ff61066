/** The plat's pages, in the order the header lists them. A new page adds one line here. */
export const PLAT_PAGES = [
  { href: "/", label: "Census" },
  { href: "/peers", label: "Peers" },
  { href: "/ward", label: "Ward" },
  { href: "/log", label: "Log" },
  { href: "/doors", label: "Doors" },
] as const;

/** Whether a plat page's link is the current page at `path`: its own path, or a page under it (/peers/{did} is under Peers). */
export function isCurrentPage(href: string, path: string): boolean {
  return path === href || (href !== "/" && path.startsWith(`${href}/`));
}

/** Shared looks of the plat, so every page reads the same in light and dark schemes. */
export const look = {
  card: "rounded-lg border border-stone-200 bg-white dark:border-stone-700 dark:bg-stone-900",
  muted: "text-stone-600 dark:text-stone-300",
  link: "underline decoration-stone-400 underline-offset-2 hover:decoration-current",
  h2: "text-xl font-semibold tracking-tight",
  mono: "font-mono text-xs break-all",
} as const;
