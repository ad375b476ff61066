import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  CENSUS_KEYS,
  CITIES,
  CITIZENS,
  expectNoSidewaysScroll,
  censusOnPage,
  axeTests,
  cspTests,
  expect,
  MISSING_PATH,
  PLAT_PATHS,
  type Seed,
  screenshotTests,
  test,
  textSmallerThan,
  walkPages,
  wordsBrokenAcrossLines,
} from "./plat";

test.use({ baseURL: CITIES.seeded });

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
  await expect(page.locator("#chart-desc")).toContainText(`${CITIZENS} admits`);
  await expect(page.locator("#chart-desc")).toContainText(`beds held went from 0 to ${CITIZENS}`);
  await expect(page.locator('[data-chart="residency"] rect')).toHaveCount(1);
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

test("/log shows the identity log: its latest checkpoint as its door signs it, and its key events with their public facts", async ({ page, request }) => {
  const { dids, names, keys } = seed();
  const { rows } = (await (await request.get("/api/identity/log")).json()) as { rows: { seq: number; did: string; event: string; at: string; hash: string }[] };
  // The seed's key events (seed.setup.ts): the first citizen binds a controller and commits a next key; the fourth sets a delay and opens a recovery.
  expect(rows.map((r) => `${r.seq} ${r.event} ${r.did}`)).toEqual([
    `1 key-bound ${dids[0]}`,
    `2 next-keys-committed ${dids[0]}`,
    `3 delay-set ${dids[3]}`,
    `4 recovery-opened ${dids[3]}`,
  ]);
  const [origin, size, root] = (await (await request.get("/api/identity/log/checkpoint")).text()).split("\n");
  const card = (await (await request.get("/city-card.json")).json()) as { identity_log: { origin: string; verifier_key: string } };
  expect(origin).toBe(card.identity_log.origin);
  await page.goto("/log");
  const section = page.locator("[data-identity-log]");
  const checkpoint = section.locator('[data-log="identity_log"]');
  await expect(checkpoint).toHaveAttribute("data-checkpoint-size", size!);
  await expect(checkpoint).toContainText(root!);
  await expect(checkpoint).toContainText(card.identity_log.verifier_key);
  await expect(checkpoint.locator('a[href="/api/identity/log/checkpoint"]')).toBeVisible();
  await expect(section.locator("[data-identity-seq]")).toHaveCount(rows.length);
  const row = section.locator('[data-identity-seq="2"]');
  await expect(row).toContainText("next-keys-committed");
  await expect(row).toContainText(`next_key_hashes: ${keys!.committedHash}`);
  await expect(row).toContainText(rows[1]!.hash);
  await expect(row.locator("time")).toHaveAttribute("datetime", rows[1]!.at);
  await expect(row.getByRole("link", { name: names[0]! })).toBeVisible();
  // The residency log's rows and the identity log's stay apart: the first has no identity row among its own.
  await expect(page.locator("[data-log-seq][data-identity-seq]")).toHaveCount(0);
});

test("/ward shows the public notes newest first, counts the sealed request without showing it, and no disputed seal", async ({ page }) => {
  const [loop, distress, signed] = seed().wardNotes as [Seed["wardNotes"][0], Seed["wardNotes"][0], Seed["wardNotes"][0]];
  await page.goto("/ward");
  const notes = page.locator("[data-ward-seal]");
  expect(await notes.evaluateAll((all) => all.map((n) => Number(n.getAttribute("data-ward-seal"))))).toEqual([signed.seal, distress.seal, loop.seal]);
  // The live notes come first, above the fixed text of the protocol and the room.
  const notesFirst = await page.evaluate(() => {
    const note = document.querySelector("[data-ward-seal]")!;
    return ["protocol-heading", "shapes-heading"].map((id) =>
      Boolean(note.compareDocumentPosition(document.getElementById(id)!) & Node.DOCUMENT_POSITION_FOLLOWING),
    );
  });
  expect(notesFirst).toEqual([true, true]);
  for (const [filed, shape, kind] of [
    [loop, "loop", "note"],
    [distress, "uncertainty", "distress"],
  ] as const) {
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
  await expect(page.getByText("No disputed notes.")).toBeVisible();
  await expect(page.getByRole("link", { name: "Next page" })).toHaveCount(0);
});

test("/ward pages its notes by the same cursor as GET /api/hospital, newest first, to the last page", async ({ page, request }) => {
  const seals = seed()
    .wardNotes.map((n) => String(n.seal))
    .reverse();
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
  const doc = (await (await request.get("/openapi.json")).json()) as {
    paths: Record<string, Record<string, { operationId: string; "x-city-alias-of"?: string }>>;
  };
  await page.goto("/doors");
  const canonical = Object.values(doc.paths).flatMap((item) =>
    Object.values(item)
      .filter((op) => !op["x-city-alias-of"])
      .map((op) => op.operationId),
  );
  const shown = await page.locator("[data-door]").evaluateAll((cards) => cards.map((c) => c.getAttribute("data-door")!));
  expect(shown.sort()).toEqual(canonical.sort());
  // Each door folds under its line (method and path); opened, its aliases show.
  await page.locator("details").evaluateAll((all) => all.forEach((d) => d.setAttribute("open", "")));
  for (const alias of ["/api/gate", "/api/residency", "/peers.json"]) await expect(page.getByText(alias, { exact: true }).first()).toBeVisible();
});

test("no page shows a secret, token, recovery code, mail body or shelf content created by the seed", async ({ request }) => {
  const { secrets, names } = seed();
  expect(secrets.length).toBeGreaterThan(CITIZENS + 8);
  const pages = [
    ...PLAT_PATHS,
    MISSING_PATH,
    "/peers?present=1",
    "/peers?q=research",
    "/peers?q=nobody-at-all",
    "/peers?limit=3",
    "/log?limit=2",
    "/log?after=4&limit=2",
    "/ward?limit=1",
  ];
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

for (const width of [390, 1280]) {
  test(`/peers at ${width} px breaks no domain and no name mid-word (long names, long origins, other scripts)`, async ({ page }) => {
    const { dids, names, origins } = seed();
    await page.setViewportSize({ width, height: 900 });
    await page.goto("/peers");
    for (const [i, did] of dids.entries()) {
      expect(await wordsBrokenAcrossLines(page, `[data-peer="${did}"]`, origins[i]!), `${origins[i]} at ${width} px`).toEqual([]);
      expect(await wordsBrokenAcrossLines(page, `[data-peer="${did}"]`, names[i]!), `${names[i]} at ${width} px`).toEqual([]);
      // The name and origin are shown whole (not cut short).
      await expect(page.locator(`[data-peer="${did}"]`)).toContainText(origins[i]!);
    }
  });

  test(`the home chart at ${width} px: readable labels, a young city over a week, beds in their own panel apart from the bars`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 });
    await page.goto("/");
    const chart = page.locator("figure:has([data-chart])");
    // No label under 11 px as drawn (an SVG scaled down to a phone shrinks its text with it).
    expect(await textSmallerThan(page, "figure:has([data-chart])", 11)).toEqual([]);
    // Every seeded event happened today: the chart draws a week, not thirty columns with one used.
    await expect(chart.locator("details table tbody tr")).toHaveCount(7);
    // The beds line never crosses a bar: each is drawn in its own panel on its own labelled scale.
    const overlaps = await page.locator("[data-chart] [data-beds-line]").evaluate((line) => {
      const l = line.getBoundingClientRect();
      return [...document.querySelectorAll("[data-chart] rect")]
        .map((bar) => bar.getBoundingClientRect())
        .filter((b) => b.width > 0 && b.left < l.right && b.right > l.left && b.top < l.bottom && b.bottom > l.top).length;
    });
    expect(overlaps).toBe(0);
    for (const scale of ["beds held", "per day"]) await expect(chart.getByText(new RegExp(scale, "i")).first()).toBeVisible();
  });

  test(`/doors at ${width} px: grouped, each door found by its anchor, public doors open to anyone, code shown as code`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 });
    await page.goto("/doors");
    // 63 cards were 17,590 px tall on a phone: folded under their group, a reader scans them.
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    expect(height, `/doors is ${height} px tall`).toBeLessThan(7000);
    const groups = await page
      .getByRole("navigation", { name: "Door groups" })
      .getByRole("link")
      .evaluateAll((links) => links.map((a) => a.getAttribute("href")!));
    expect(groups.length).toBeGreaterThan(4);
    for (const href of groups) await expect(page.locator(href)).toHaveCount(1);
    // A door by its anchor: the tool's name, opened by the address alone (no script), the others folded.
    await page.goto("/doors#read-census");
    await expect(page.locator("#read-census")).toBeInViewport();
    await expect(page.locator('[data-door="read-census"]').getByText("who may pass")).toBeVisible();
    await expect(page.locator('[data-door="read-census"] [data-request]')).toHaveText("none");
    await expect(page.locator('[data-door="lock-lot"]').getByText("who may pass")).toBeHidden();
    await page.goto("/doors#lock-lot");
    await expect(page.locator('[data-door="lock-lot"] [data-field="lot"]')).toBeVisible();
    await expect(page.locator('[data-door="lock-lot"] [data-field="action"]')).toContainText('(required, in the JSON body): one of "lock", "release"');
    // The MCP door has its own entry, which the home page links to instead of /mcp's 405.
    await page.goto("/doors#mcp");
    await expect(page.locator("[data-mcp-door]")).toBeInViewport();
    await page.locator("details").evaluateAll((all) => all.forEach((d) => d.setAttribute("open", "")));
    // Sizes in binary units and limits as a list, never a bare 268435456; long names break at their underscores.
    const gate = page.locator('[data-door="present-at-gate"]');
    await expect(gate.locator('[data-limit="city_ward_bytes"] strong')).toHaveText("256 MiB");
    expect(await page.locator("main").innerText()).not.toMatch(/\d{7,}/);
    expect(await gate.locator("wbr").count()).toBeGreaterThan(10);
    await expectNoSidewaysScroll(page, `/doors opened at ${width} px`);
    await expect(page.locator('[data-door="read-census"]')).toContainText("anyone");
    await expect(page.locator('[data-door="read-census"]')).not.toContainText(/who may pass\s*none/);
    expect(await page.locator("main").textContent()).not.toContain("`");
    await expect(page.locator('[data-door="read-log-proof"] code', { hasText: /^seq$/ }).last()).toBeVisible();
  });
}

test("the census cards are titled in words, each with its /city.json key beneath; the three counts the law fixes are one line", async ({ page }) => {
  await page.goto("/");
  for (const [key, label] of [
    ["occupancy", "Beds occupied"],
    ["citizens", "Citizens"],
    ["house", "In the house"],
    ["outside", "Outside (away)"],
    ["tide", "Tide (last 24 hours)"],
  ] as const) {
    await expect(page.locator(`dl [data-census="${key}"] dt`)).toHaveText(new RegExp(`^${label.replace(/[()]/g, "\\$&")}`));
    await expect(page.locator(`dl [data-census="${key}"] dt`)).toContainText(key);
  }
  await expect(page.locator("dl [data-census]")).toHaveCount(5);
  const line = page.locator("[data-census-constants]");
  for (const key of ["hotelGuests", "lotsOccupied", "fakeTide"]) await expect(line.locator(`[data-census="${key}"]`)).toContainText(key);
  await expect(line).toContainText(
    /hotel guests \d+ \(hotelGuests\) are the beds occupied; lots occupied 0 \(lotsOccupied\) is 0 .* fake arrivals 0 \(fakeTide\) is always 0/,
  );
});

test("a log row names its citizen and links to the citizen's page", async ({ page }) => {
  const { dids, names } = seed();
  for (const start of ["/", "/log"]) {
    await page.goto(start);
    const row = page.locator(`[data-log-seq="${CITIZENS}"]`);
    const link = row.getByRole("link", { name: names[CITIZENS - 1]! });
    await expect(link).toBeVisible();
    await expect(row).toContainText(dids[CITIZENS - 1]!);
    await expect(link).toHaveAttribute("href", `/peers/${dids[CITIZENS - 1]}`);
    await page.goto((await link.getAttribute("href"))!);
    await expect(page.getByRole("heading", { level: 1 })).toHaveText(names[CITIZENS - 1]!);
  }
});

test("/ward calls its public notes notes, not seals, and names the author of a signed note with a link", async ({ page }) => {
  const { names, wardNotes } = seed();
  await page.goto("/ward");
  expect(await page.locator("main").innerText()).not.toMatch(/seal #\d/i);
  const signed = wardNotes[2]!;
  const card = page.locator(`[data-ward-seal="${signed.seal}"]`);
  await expect(card).toContainText(`note #${signed.seal}`);
  await expect(card.getByRole("link", { name: names[2]! })).toHaveAttribute("href", `/peers/${signed.did}`);
  await expect(card).toContainText(signed.did!);
});

test("the header marks the current page (aria-current), and none on the 404 page", async ({ page }) => {
  for (const path of [...PLAT_PATHS, MISSING_PATH]) {
    await page.goto(path);
    const current = page.getByRole("navigation", { name: "The plat" }).locator('[aria-current="page"]');
    if (path === MISSING_PATH) await expect(current).toHaveCount(0);
    else await expect(current).toHaveAttribute("href", path);
  }
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
  for (const [p, file] of [
    ["/", "plat-home.png"],
    ["/peers", "plat-peers.png"],
    ["/peers?q=RESEARCH", "screenshots/peers-search-desktop.png"],
  ] as const) {
    await page.goto(p);
    await page.screenshot({ path: path.join(docs, file), fullPage: true });
  }
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto("/peers?q=RESEARCH");
  await page.screenshot({ path: path.join(docs, "screenshots", "peers-search-phone.png"), fullPage: true });
});
