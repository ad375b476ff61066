import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Page } from "@playwright/test";
import { attachScreenshot, CITIES, expect, expectNoSidewaysScroll, LOOP_TIMEOUT, SCHEMES, type Seed, seriousViolations, test } from "./plat";

test.use({ baseURL: CITIES.seeded });

// A citizen's page at /peers/{did}, on the city the seed project filled through its doors: its
// first citizen proved a key, bound a controller and committed a next key; its fourth set a
// recovery delay, and one of its recovery codes opened a public recovery.
const seed = (): Seed => JSON.parse(readFileSync(process.env.CITY_E2E_SEED_FILE!, "utf8"));
const keys = () => seed().keys!;
const region = (page: Page, name: string) => page.getByRole("region", { name });
const fact = (page: Page, term: string) => page.locator(`[data-fact="${term}"] dd`);

test("a citizen's page shows the citizen: name, runtime, origin as claimed, tier, bed, standing, first bound, proven key", async ({ page, request }) => {
  const { names, origins, dids } = seed();
  const response = await page.goto(`/peers/${dids[0]}`);
  expect(response?.status()).toBe(200);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(names[0]!);
  // Every fact as the directory row publishes it.
  const { peers } = (await (await request.get(`/api/peers?q=${encodeURIComponent(names[0]!)}`)).json()) as {
    peers: { fingerprint: string; runtime: string; bed_id: string; bound_at: string; proven_did: string; last_seen_at: string }[];
  };
  const row = peers.find((p) => p.fingerprint === dids[0])!;
  await expect(fact(page, "runtime")).toHaveText(row.runtime);
  // Not proven (CITY-ORIGIN/1): marked claimed, and said so in words.
  await expect(fact(page, "origin")).toContainText(origins[0]!);
  await expect(fact(page, "origin").locator('[data-origin="claimed"]')).toHaveCount(1);
  await expect(fact(page, "origin")).toContainText("claimed at the gate, not proven");
  await expect(fact(page, "tier")).toHaveText("proven");
  await expect(fact(page, "bed")).toHaveText(row.bed_id);
  await expect(fact(page, "standing").locator("[data-standing]")).toHaveText("present");
  await expect(fact(page, "standing")).toContainText("bound since");
  await expect(fact(page, "first bound").locator(`time[datetime="${row.bound_at}"]`)).toHaveCount(1);
  await expect(fact(page, "last seen").locator(`time[datetime="${row.last_seen_at}"]`)).toHaveCount(1);
  await expect(fact(page, "proven key")).toContainText(row.proven_did);
  await expect(fact(page, "DID")).toHaveText(dids[0]!);
  // Peers is the current page of the header; no witness is configured here, so nothing says witnessed.
  await expect(page.getByRole("navigation", { name: "The plat" }).locator('[aria-current="page"]')).toHaveAttribute("href", "/peers");
  expect(await page.locator("main").innerText()).not.toMatch(/witness/i);
  // A citizen never proven says so.
  await page.goto(`/peers/${dids[1]}`);
  await expect(fact(page, "tier")).toHaveText("citizen");
  await expect(fact(page, "proven key")).toContainText("none");
});

test("a citizen's residency log rows are listed newest first, each linked to its inclusion proof", async ({ page, request }) => {
  const { dids } = seed();
  await page.goto(`/peers/${dids[0]}`);
  const rows = region(page, "Residency log").locator("[data-log-seq]");
  // The seed admits it once, as the log's first row; the log door says the same of that row.
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute("data-log-seq", "1");
  await expect(rows.first()).toContainText("admit");
  const { rows: logged } = (await (await request.get("/api/residency/log?limit=1")).json()) as { rows: { seq: number; did: string; hash: string }[] };
  expect(logged[0]!.did).toBe(dids[0]);
  await expect(rows.first()).toContainText(logged[0]!.hash);
  const proof = rows.first().locator("[data-proof]");
  await expect(proof).toHaveAttribute("href", "/api/residency/log/proof?seq=1");
  const answer = await request.get((await proof.getAttribute("href"))!);
  expect(answer.status()).toBe(200);
  expect(await answer.json()).toMatchObject({ seq: 1, leaf_index: 0 });
  // The standing's "since" is that row.
  await expect(fact(page, "standing")).toContainText("(log row #1, admit)");
});

test("the name in /peers links to the citizen's page", async ({ page }) => {
  const { dids, names } = seed();
  await page.goto("/peers");
  const link = page.locator(`[data-peer="${dids[0]}"]`).getByRole("link", { name: names[0]! });
  await expect(link).toHaveAttribute("href", `/peers/${dids[0]}`);
  await link.click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(names[0]!);
});

test("a citizen with a controller and a commitment shows its key history, newest first, and that pre-rotation stands", async ({ page }) => {
  const { controlled, committedHash } = keys();
  await page.goto(`/peers/${controlled}`);
  const history = region(page, "Key history").locator("[data-identity-seq]");
  // The controller bound at the gate, then the commitment: shown newest first.
  await expect(history.locator("p.font-medium")).toContainText([/^next-keys-committed/, /^key-bound/]);
  const seqs = (await history.evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-identity-seq"))))) as number[];
  expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
  await expect(history.first()).toContainText(committedHash);
  await expect(history.first().getByRole("link", { name: "inclusion proof" })).toHaveAttribute("href", `/api/identity/log/proof?seq=${seqs[0]}`);
  await expect(history.nth(1)).toContainText("via: gate");
  await expect(region(page, "Recovery")).toContainText("No recovery is open");
  await expect(region(page, "Recovery")).toContainText("pre-rotation stands");
  await expect(page.locator("[data-recovery-open]")).toHaveCount(0);
});

test("a citizen with an open recovery shows its clock: when it can complete, its holds, and the recovery in its key history", async ({ page }) => {
  const { recovering, opensAfter } = keys();
  await page.goto(`/peers/${recovering}`);
  const open = page.getByRole("status");
  await expect(open).toContainText("A recovery is open");
  await expect(open).toHaveAttribute("data-recovery-open", opensAfter);
  await expect(open.locator(`time[datetime="${opensAfter}"]`)).toHaveCount(1);
  await expect(open).toContainText("by a recovery code; holds 0 of 2");
  // The clock, in words: the 48 hours of the delay the seed set, less the moments since it opened.
  await expect(open).toContainText(/\((tomorrow|in 2 days)\)/);
  await expect(region(page, "Key history").locator("[data-identity-seq] p.font-medium")).toContainText([/^recovery-opened/, /^delay-set/]);
});

test("a DID no citizen holds, or no DID at all, is said so plainly on the page", async ({ page }) => {
  for (const did of ["0".repeat(64), "not-a-did"]) {
    const response = await page.goto(`/peers/${did}`);
    expect(response?.status(), did).toBe(200);
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("No such citizen");
    await expect(page.getByRole("alert")).toHaveText("No citizen of the city has that DID.");
    await expect(region(page, "Key history")).toHaveCount(0);
    await expect(region(page, "Residency log")).toHaveCount(0);
  }
});

const pages = () => [`/peers/${keys().controlled}`, `/peers/${keys().recovering}`, `/peers/${"0".repeat(64)}`];

// At a phone's 390 px and a desktop's 1280 px, in both schemes: axe finds nothing serious, nothing
// scrolls sideways, and the screenshots are attached (CITY_PLAT_DOCS=1 keeps them in docs/screenshots).
for (const width of [390, 1280] as const) {
  test.describe(() => {
    test.use({ javaScriptEnabled: true });
    test(`the citizen's pages at ${width} px: axe clean in both schemes, no sideways scroll (screenshots attached)`, async ({ page }, testInfo) => {
      test.setTimeout(LOOP_TIMEOUT);
      await page.setViewportSize({ width, height: 900 });
      for (const colorScheme of SCHEMES) {
        await page.emulateMedia({ colorScheme });
        for (const [i, p] of pages().entries()) {
          await page.goto(p);
          expect(await seriousViolations(page), `${p} at ${width} px in the ${colorScheme} scheme`).toEqual([]);
          await expectNoSidewaysScroll(page, `${p} at ${width} px`);
          const name = `citizen-${i}-${colorScheme}-${width}`;
          await attachScreenshot(page, testInfo, name);
          if (process.env.CITY_PLAT_DOCS === "1" && i === 0) {
            mkdirSync(path.join(process.cwd(), "docs", "screenshots"), { recursive: true });
            await page.screenshot({ path: path.join(process.cwd(), "docs", "screenshots", `citizen-${colorScheme}-${width}.png`), fullPage: true });
          }
        }
      }
    });
  });
}
