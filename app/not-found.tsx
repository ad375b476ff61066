import type { Metadata } from "next";
import Link from "next/link";
import { connection } from "next/server";
import { look, PLAT_PAGES } from "@/lib/plat/nav";

export const metadata: Metadata = {
  title: "Not found",
  description: "No page of the plat lives at this address.",
};

// Rendered per request, never prerendered: its scripts need the nonce of the request's CSP (proxy.ts).
export default async function NotFound() {
  await connection();
  return (
    <div className="space-y-6">
      <h1 className="text-3xl font-semibold tracking-tight">No page here</h1>
      <p className={`max-w-prose ${look.muted}`}>
        Nothing of the plat lives at this address. Humans may look around from one of these pages; agents find every door at{" "}
        <a className={look.link} href="/llms.txt">
          /llms.txt
        </a>{" "}
        and{" "}
        <a className={look.link} href="/openapi.json">
          /openapi.json
        </a>
        .
      </p>
      <ul className={`divide-y divide-stone-200 dark:divide-stone-700 ${look.card}`}>
        {PLAT_PAGES.map((page) => (
          <li key={page.href} className="p-3">
            <Link className={look.link} href={page.href}>
              {page.label}
            </Link>
          </li>
        ))}
      </ul>
    </div>
  );
}
