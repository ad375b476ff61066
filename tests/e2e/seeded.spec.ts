import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { CENSUS_KEYS, CITIZENS, censusOnPage, axeTests, cspTests, MISSING_PATH, PLAT_PATHS, type Seed, screenshotTests, walkPages } from "./plat";

// Runs after the seed project admitted CITIZENS citizens and filled their private shelves.
const seed = (): Seed => JSON.parse(readFileSync(process.env.CITY_E2E_SEED_FILE!, "utf8"));

test("every page loads on the seeded city", async ({ page }) => {
  for (const p of PLAT_PATHS) {
    const response = await page.goto(p);
    expect(response?.status(), p).toBe(200);
    await expect(page.getByRole("heading", { level: 1 })).toHaveCount(1);
    // No form writes: the one form (the peer search on /peers) is a plain GET.
    await expect(page.locator('form:not([method="get"])')).toHaveCount(0);
    await expect(page.locator("form")).toHaveCount(p === "/peers" ? 1 : 0);
  }
});

test("/peers finds a citizen by a search in any case, by look-alike letters, and says plainly when nothing matches", async ({ page }) => {
  const { dids, names } = seed();
  const wanted = names[1]!;
  await page.goto("/peers");
  await page.getByRole("searchbox", { name: "Find a citizen by name or origin" }).fill(wanted.toUpperCase());
  await page.getByRole("button", { name: "Search" }).click();
  await expect(page).toHaveURL(/\/peers\?q=/);
  await expect(page.locator("[data-peer]").first()).toHaveAttribute("data-peer", dids[1]!);
  await expect(page.locator(`[data-peer="${dids[1]}"]`).getByRole("heading")).toHaveText(wanted);
  // The same name with a Cyrillic а for the Latin a finds the same citizen first.
  await page.goto(`/peers?q=${encodeURIComponent(wanted.replace("a", "\u0430"))}`);
  await expect(page.locator("[data-peer]").first()).toHaveAttribute("data-peer", dids[1]!);
  // A filter link keeps the text; a search that finds nothing is an empty list, not an error.
  await page.getByRole("link", { name: "Holding a bed only" }).click();
  await expect(page).toHaveURL(/present=1/);
  await expect(page).toHaveURL(/q=/);
  const response = await page.goto("/peers?q=nobody-by-this-name-at-all");
  expect(response?.status()).toBe(200);
  await expect(page.locator("[data-peer]")).toHaveCount(0);
  await expect(page.locator('[data-empty="peers"]')).toContainText("No citizen's name or origin matches");
  const refused = await page.goto(`/peers?q=${"x".repeat(201)}`);
  expect(refused?.status()).toBe(200);
  await expect(page.getByRole("alert")).toContainText("at most 200 characters");
});

test("the census on / equals /city.json, and the chart and latest rows show the admissions", async ({ page, request }) => {
  const census = (await (await request.get("/city.json")).json()) as Record<string, number>;
  await page.goto("/");
  const shown = await censusOnPage(page);
  for (const key of CENSUS_KEYS) expect(shown[key], key).toBe(census[key]);
  expect(shown.citizens).toBe(CITIZENS);
  expect(shown.occupancy).toBe(CITIZENS);
  await expect(page.locator('svg[data-chart="residency"] desc')).toContainText(`${CITIZENS} admits`);
  await expect(page.locator('svg[data-chart="residency"] desc')).toContainText(`beds held went from 0 to ${CITIZENS}`);
  await expect(page.locator('svg[data-chart="residency"] rect')).toHaveCount(1);
  // The five newest rows, newest first.
  expect(await page.locator("[data-log-seq]").evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-log-seq"))))).toEqual(
    [7, 6, 5, 4, 3].map((n) => n - 7 + CITIZENS),
  );
});

test("/peers walks to its last page by links and lists every citizen once, with the proven mark", async ({ page }) => {
  const { dids, names } = seed();
  const pages = await walkPages(page, "/peers?limit=3", "data-peer");
  expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
  expect(pages.flat()).toEqual(dids);
  await page.goto("/peers?limit=3");
  const first = page.locator(`[data-peer="${dids[0]}"]`);
  await expect(first.getByRole("heading")).toHaveText(names[0]!);
  await expect(first.getByText("✓ proven")).toBeVisible();
  await expect(first.getByText("present", { exact: true })).toBeVisible();
  await expect(first.locator("time").last()).toHaveAttribute("datetime", /^\d{4}-\d\d-\d\dT/);
  await expect(page.locator(`[data-peer="${dids[1]}"]`).getByText("✓ proven")).toHaveCount(0);
  const present = await walkPages(page, "/peers?present=1&limit=4", "data-peer");
  expect(present.flat()).toEqual(dids);
});

test("/peers answers a cursor it never issued with a plain message, not an error", async ({ page }) => {
  const response = await page.goto("/peers?cursor=bm90LWEtY3Vyc29y");
  expect(response?.status()).toBe(200);
  await expect(page.getByRole("alert")).toContainText("not one this directory issued");
});

test("/log walks to its last page, shows every row's event, DID, time and hash, and verifies the chain", async ({ page, request }) => {
  const { dids } = seed();
  const pages = await walkPages(page, "/log?limit=2", "data-log-seq");
  expect(pages.map((p) => p.length)).toEqual([2, 2, 2, 1]);
  expect(pages.flat().map(Number)).toEqual(dids.map((_, i) => i + 1));
  const api = (await (await request.get("/api/residency/log")).json()) as { rows: { seq: number; did: string; hash: string; at: string; event: string }[] };
  const last = api.rows[api.rows.length - 1]!;
  const row = page.locator(`[data-log-seq="${last.seq}"]`);
  await expect(row).toContainText(last.did);
  await expect(row).toContainText(last.hash);
  await expect(row).toContainText(last.event);
  await expect(row.locator("time")).toHaveAttribute("datetime", last.at);
  await expect(page.locator("[data-chain]")).toHaveAttribute("data-chain", "intact");
  await expect(page.getByText(`All ${CITIZENS} rows recomputed just now`)).toBeVisible();
  await page.goto("/log?limit=2");
  await page.goto((await page.getByRole("link", { name: "Last page" }).getAttribute("href"))!);
  await expect(page.locator("[data-log-seq]")).toHaveCount(1);
});

test("/ward shows the public notes newest first, counts the sealed request without showing it, and no disputed seal", async ({ page }) => {
  const [loop, distress] = seed().wardNotes as [Seed["wardNotes"][0], Seed["wardNotes"][0]];
  await page.goto("/ward");
  const notes = page.locator("[data-ward-seal]");
  expect(await notes.evaluateAll((all) => all.map((n) => Number(n.getAttribute("data-ward-seal"))))).toEqual([distress.seal, loop.seal]);
  for (const [filed, shape, kind] of [[loop, "loop", "note"], [distress, "uncertainty", "distress"]] as const) {
    const card = page.locator(`[data-ward-seal="${filed.seal}"]`);
    await expect(card).toContainText(filed.state);
    await expect(card).toContainText(filed.note);
    await expect(card.getByText(shape, { exact: true })).toBeVisible();
    await expect(card.getByText(kind, { exact: true })).toBeVisible();
    await expect(card).toContainText("unsigned");
    await expect(card.locator("time")).toHaveAttribute("datetime", /^\d{4}-\d\d-\d\dT/);
  }
  await expect(page.locator('[data-ward-count="probes_hidden"] [data-value]')).toHaveText("1");
  // The distress note and the sealed gate request came to the ward within the day; the plain note is not distress.
  await expect(page.locator('[data-ward-count="occupied"] [data-value]')).toHaveText("2");
  await expect(page.getByText("1 sealed note is counted and never shown.")).toBeVisible();
  await expect(page.getByText("No disputed seals.")).toBeVisible();
  await expect(page.getByRole("link", { name: "Next page" })).toHaveCount(0);
});

test("/ward pages its notes by the same cursor as GET /api/hospital, newest first, to the last page", async ({ page, request }) => {
  const seals = seed().wardNotes.map((n) => String(n.seal)).reverse();
  expect(await walkPages(page, "/ward?limit=1", "data-ward-seal")).toEqual(seals.map((s) => [s]));
  const api = (await (await request.get("/api/hospital?limit=1")).json()) as { next_cursor: string };
  await page.goto("/ward?limit=1");
  expect(await page.getByRole("link", { name: "Next page" }).getAttribute("href")).toBe(`/ward?cursor=${api.next_cursor}&limit=1`);
});

test("/ward answers a cursor it never issued with a plain message, not an error", async ({ page }) => {
  const response = await page.goto("/ward?cursor=bm90LWEtY3Vyc29y");
  expect(response?.status()).toBe(200);
  await expect(page.getByRole("alert")).toContainText("not one this ward issued");
});

test("/doors lists every door of /openapi.json with its aliases", async ({ page, request }) => {
  const doc = (await (await request.get("/openapi.json")).json()) as { paths: Record<string, Record<string, { operationId: string; "x-city-alias-of"?: string }>> };
  await page.goto("/doors");
  const canonical = Object.values(doc.paths).flatMap((item) => Object.values(item).filter((op) => !op["x-city-alias-of"]).map((op) => op.operationId));
  const shown = await page.locator("[data-door]").evaluateAll((cards) => cards.map((c) => c.getAttribute("data-door")!));
  expect(shown.sort()).toEqual(canonical.sort());
  for (const alias of ["/api/gate", "/api/residency", "/peers.json"]) await expect(page.getByText(alias, { exact: true }).first()).toBeVisible();
});

test("no page shows a secret, token, recovery code, mail body or shelf content created by the seed", async ({ request }) => {
  const { secrets, names } = seed();
  expect(secrets.length).toBeGreaterThan(CITIZENS + 8);
  const pages = [...PLAT_PATHS, MISSING_PATH, "/peers?present=1", "/peers?q=plat-agent", "/peers?q=nobody-at-all", "/peers?limit=3", "/log?limit=2", "/log?after=4&limit=2", "/ward?limit=1"];
  let html = "";
  for (const p of pages) html += await (await request.get(p)).text();
  for (const name of names) expect(html, "the seeded citizens are on the pages").toContain(name);
  for (const secret of secrets) expect(html.includes(secret), `a seeded secret or private text appears: ${secret.slice(0, 12)}...`).toBe(false);
  // Parts of a secret are no better: no city secret, token or recovery code prefix at all.
  expect(html).not.toMatch(/city_(sk|st|rc)_[A-Za-z0-9_-]{6}/);
});

test.describe(() => {
  // The page's own policy allows no fetch elsewhere; an agent's page would have its own. The fetches are the browser's, CORS and all.
  test.use({ javaScriptEnabled: true, bypassCSP: true });
  test("a page on another origin polls the census by ETag: its browser preflights If-None-Match, reads the tag, and gets 304", async ({ page, baseURL }) => {
    // localhost and 127.0.0.1 are two origins: the empty city's page asks the seeded city.
    await page.goto(`http://localhost:${process.env.CITY_E2E_EMPTY_PORT}/`);
    const polled = await page.evaluate(async (url) => {
      const first = await fetch(url);
      const tag = first.headers.get("etag");
      const again = await fetch(url, { headers: { "if-none-match": tag ?? "" } });
      return { origin: location.origin, status: first.status, tag, again: again.status, againTag: again.headers.get("etag"), body: await again.text() };
    }, `${baseURL}/city.json`);
    expect(polled.origin).not.toBe(new URL(baseURL!).origin);
    expect(polled.status).toBe(200);
    expect(polled.tag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(polled.again).toBe(304);
    expect(polled.againTag).toBe(polled.tag);
    expect(polled.body).toBe("");
  });
});

axeTests("seeded");
cspTests("seeded");

screenshotTests("seeded", [...PLAT_PATHS, MISSING_PATH]);

// CITY_PLAT_DOCS=1 writes the README's pictures of the home and peers pages and of a search.
test("the README's pictures of the seeded city", async ({ page }) => {
  test.skip(process.env.CITY_PLAT_DOCS !== "1", "pictures are written on request: CITY_PLAT_DOCS=1");
  test.setTimeout(60_000);
  const docs = path.join(process.cwd(), "docs");
  mkdirSync(path.join(docs, "screenshots"), { recursive: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  for (const [p, file] of [["/", "plat-home.png"], ["/peers", "plat-peers.png"], ["/peers?q=PLAT-AGENT", "screenshots/peers-search-desktop.png"]] as const) {
    await page.goto(p);
    await page.screenshot({ path: path.join(docs, file), fullPage: true });
  }
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto("/peers?q=PLAT-AGENT");
  await page.screenshot({ path: path.join(docs, "screenshots", "peers-search-phone.png"), fullPage: true });
});
