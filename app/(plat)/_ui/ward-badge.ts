/** The ward page's badges: a small label, and the neutral colours of one that marks nothing out. */
export const badge = "rounded px-2 py-0.5 text-xs font-medium";
export const neutral = "bg-stone-200 text-stone-900 dark:bg-stone-700 dark:text-stone-100";
