import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { axeTests, CENSUS_KEYS, CITIES, censusOnPage, expect, screenshotTests, type StatesSeed, test } from "./plat";

test.use({ baseURL: CITIES.states });

// Runs after states.setup.ts: four citizens (present, away, returned, exported), a ward note and a
// disputed one, four visits to an open clinic, and residency log row #2 changed by the owner.
const seed = (): StatesSeed => JSON.parse(readFileSync(process.env.CITY_E2E_STATES_SEED_FILE!, "utf8"));

const STATES_PATHS = ["/", "/peers", "/log", "/ward"] as const;
/** The log's events in order: four admissions, the away citizen's exit, the returned one's exit and return, the export. */
const EVENTS = ["admit", "admit", "admit", "admit", "exit", "exit", "return", "export"];

test("/ shows the census without the exported citizen, equal to /city.json, and exit, return and export rows in the chart and the latest rows", async ({
  page,
  request,
}) => {
  const census = (await (await request.get("/city.json")).json()) as Record<string, number>;
  await page.goto("/");
  const shown = await censusOnPage(page);
  for (const key of CENSUS_KEYS) expect(shown[key], key).toBe(census[key]);
  // Present, away and returned are citizens; the exported one is not. Beds: present and returned.
  expect(shown.citizens).toBe(3);
  expect(shown.occupancy).toBe(2);
  const chart = page.locator('[data-chart="residency"]');
  await expect(page.locator("#chart-desc")).toContainText("4 admits, 1 return, 2 exits and 1 export; beds held went from 0 to 2.");
  // The table's days, summed: the seed's events fall on one UTC day, or two when it ran across
  // midnight, and the page may be read on a later day than the seed's (whose row is then all 0).
  // One bar per day and kind of event that has any; beds held at the end of the last day.
  const days = await page
    .locator("details table tbody tr")
    .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll("td")].map((cell) => Number(cell.textContent))));
  const sums = [0, 1, 2, 3].map((column) => days.reduce((sum, day) => sum + day[column]!, 0));
  expect(sums).toEqual([4, 1, 2, 1]);
  expect(days.at(-1)![4]).toBe(2);
  await expect(chart.locator("rect")).toHaveCount(days.flatMap((day) => day.slice(0, 4)).filter((n) => n > 0).length);
  const latest = page.locator("[data-log-seq]");
  expect(await latest.evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-log-seq"))))).toEqual([8, 7, 6, 5, 4]);
  for (const seq of [8, 7, 6, 5, 4]) await expect(page.locator(`[data-log-seq="${seq}"]`).getByText(EVENTS[seq - 1]!, { exact: true })).toBeVisible();
  await expect(page.locator(`[data-log-seq="8"]`)).toContainText(seed().exported.did);
});

test("/peers shows the away citizen away and without a bed, the returned one present, and never the exported one", async ({ page, request }) => {
  const { present, away, returned, exported } = seed();
  await page.goto("/peers");
  expect(await page.locator("[data-peer]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-peer")))).toEqual([present.did, away.did, returned.did]);
  const api = (await (await request.get("/api/peers")).json()) as { peers: { fingerprint: string; residency_status: string; present: boolean }[] };
  expect(api.peers.map((p) => [p.fingerprint, p.residency_status, p.present])).toEqual([
    [present.did, "bound", true],
    [away.did, "away", false],
    [returned.did, "bound", true],
  ]);
  const awayCard = page.locator(`[data-peer="${away.did}"]`);
  await expect(awayCard.getByRole("heading")).toHaveText(away.name);
  await expect(awayCard.getByText("away", { exact: true })).toBeVisible();
  await expect(awayCard.getByText("present", { exact: true })).toHaveCount(0);
  await expect(awayCard).toContainText("bed none");
  for (const citizen of [present, returned]) {
    const card = page.locator(`[data-peer="${citizen.did}"]`);
    await expect(card.getByText("present", { exact: true })).toBeVisible();
    await expect(card.getByText("away", { exact: true })).toHaveCount(0);
    await expect(card).not.toContainText("bed none");
  }
  await page.goto("/peers?present=1");
  expect(await page.locator("[data-peer]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-peer")))).toEqual([present.did, returned.did]);
  // The exported citizen is in no list and no search, by name or DID (a search echoes the text asked, nothing more).
  for (const p of ["/peers", "/peers?present=1"]) {
    const html = await (await request.get(p)).text();
    expect(html, p).not.toContain(exported.name);
    expect(html, p).not.toContain(exported.did);
  }
  await page.goto(`/peers?q=${exported.name}`);
  await expect(page.locator("[data-peer]")).toHaveCount(0);
  await expect(page.locator('[data-empty="peers"]')).toContainText(`No citizen's name or origin matches “${exported.name}”.`);
  expect(await (await request.get(`/peers?q=${exported.name}`)).text()).not.toContain(exported.did);
});

test("/log shows the exit, return and export rows, and says the chain is broken at row #2 and why, as the verify door does", async ({ page, request }) => {
  const { broken, away } = seed();
  const verify = (await (await request.get("/api/residency/log/verify")).json()) as {
    intact: boolean;
    rows_checked: number;
    first_broken: { seq: number; reason: string };
  };
  expect(verify).toMatchObject({ intact: false, rows_checked: 1, first_broken: { seq: broken.seq } });
  await page.goto("/log");
  const chain = page.locator("[data-chain]");
  await expect(chain).toHaveAttribute("data-chain", "broken");
  await expect(chain.getByRole("heading")).toHaveText("Chain verification: the chain is broken");
  await expect(chain).toContainText(`1 row holds; row #${broken.seq} breaks it: ${verify.first_broken.reason}.`);
  expect(verify.first_broken.reason).toBe("hash does not match the row's content (the row was changed)");
  // Never the words of an intact chain.
  await expect(page.getByText("the chain holds")).toHaveCount(0);
  await expect(page.getByText(/recomputed just now/)).toHaveCount(0);
  // The row itself is marked where it stands, with what the owner wrote into it; no other row is.
  const rows = page.locator("[data-log-seq]");
  expect(await rows.evaluateAll((all) => all.map((r) => r.querySelector("span.rounded")!.textContent))).toEqual(EVENTS);
  await expect(page.locator("[data-broken]")).toHaveCount(1);
  const row = page.locator(`[data-log-seq="${broken.seq}"]`);
  await expect(row).toHaveAttribute("data-broken", "");
  await expect(row).toContainText(`breaks the chain: ${verify.first_broken.reason}`);
  await expect(row).toContainText(broken.did);
  await expect(row).not.toContainText(away.did);
  // The link to the broken row opens the page it starts.
  await page.goto((await page.locator("[data-broken-link]").getAttribute("href"))!);
  await expect(page.locator("[data-log-seq]").first()).toHaveAttribute("data-log-seq", String(broken.seq));
  await expect(page.locator("[data-log-seq]").first()).toHaveAttribute("data-broken", "");
});

test("/ward marks the disputed note and lists its seal, never shows its claimed name, and shows the clinic open with its gauges as /api/clinic reads them", async ({
  page,
  request,
}) => {
  const { disputed, wardNote, clinic } = seed();
  const lane = (await (await request.get("/api/hospital")).json()) as { disputed: { seals: number[]; count: number } };
  expect(lane.disputed).toMatchObject({ seals: [disputed.seal], count: 1 });
  await page.goto("/ward");
  await expect(page.locator('[data-ward-count="disputed"] [data-value]')).toHaveText("1");
  const list = page.locator("[data-disputed]");
  await expect(list).toHaveAttribute("data-disputed", "1");
  await expect(list).toContainText(`1 note has a disputed attribution: note #${disputed.seal}.`);
  await expect(page.getByText("No disputed notes.")).toHaveCount(0);
  const card = page.locator(`[data-ward-seal="${disputed.seal}"]`);
  await expect(card.getByText("disputed", { exact: true })).toBeVisible();
  await expect(card).toContainText("unsigned");
  await expect(card).not.toContainText(disputed.claimedName);
  const filed = page.locator(`[data-ward-seal="${wardNote.seal}"]`);
  await expect(filed).toContainText(wardNote.note);
  await expect(filed.getByText("disputed", { exact: true })).toHaveCount(0);

  const door = (await (await request.get("/api/clinic")).json()) as {
    open: boolean;
    gauges: { answered_last_24h: { total: number; asclepius: number; hygieia: number }; city_window: { spent: number; newcomer_spent: number; hits: number } };
  };
  expect(door.open).toBe(true);
  const { answered, failed, refused } = clinic;
  // Spent: every visit past the desk (answered or failed); hits: every attempt at the desk, the refused one too.
  expect(door.gauges.answered_last_24h).toMatchObject({ total: answered, asclepius: answered, hygieia: 0 });
  expect(door.gauges.city_window).toMatchObject({ spent: answered + failed, newcomer_spent: answered + failed, hits: answered + failed + refused });
  const section = page.locator("[data-clinic]");
  await expect(section).toHaveAttribute("data-clinic", "open");
  await expect(page.getByRole("heading", { name: "The clinic is open" })).toBeVisible();
  await expect(section.locator('[data-physician="asclepius"]')).toHaveText("asclepius: configured");
  await expect(section.locator('[data-physician="hygieia"]')).toHaveText("hygieia: not configured");
  await expect(section.locator('[data-gauge="answered"]')).toHaveText(String(answered));
  await expect(section.locator('[data-gauge="city-spent"]')).toHaveText(String(answered + failed));
  await expect(section.locator('[data-gauge="newcomer-spent"]')).toHaveText(String(answered + failed));
  await expect(section.locator('[data-gauge="city-window"]')).toHaveText(String(answered + failed + refused));
  for (const [physician, n] of [
    ["asclepius", answered],
    ["hygieia", 0],
  ] as const) {
    await expect(section.locator("dt", { hasText: `answered by ${physician}` }).locator("xpath=following-sibling::dd[1]")).toHaveText(String(n));
  }
  // Every gauge was read: none says "not counted".
  expect(await section.locator("dd").allTextContents()).not.toContain("not counted");
});

test("a citizen's page says where it stands and since which row: away since its exit, back since its return; an exported one says only that it left", async ({
  page,
  request,
}) => {
  const { away, returned, exported } = seed();
  const fact = (term: string) => page.locator(`[data-fact="${term}"] dd`);
  const rows = () => page.getByRole("region", { name: "Residency log" }).locator("[data-log-seq]");
  await page.goto(`/peers/${away.did}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(away.name);
  await expect(fact("standing").locator("[data-standing]")).toHaveText("away");
  await expect(fact("standing")).toContainText("(log row #5, exit)");
  await expect(fact("bed")).toHaveText("none");
  await page.goto(`/peers/${returned.did}`);
  await expect(fact("standing").locator("[data-standing]")).toHaveText("present");
  await expect(fact("standing")).toContainText("(log row #7, return)");
  expect(await rows().evaluateAll((r) => r.map((e) => e.getAttribute("data-log-seq")))).toEqual(["7", "6", "3"]);
  const response = await page.goto(`/peers/${exported.did}`);
  expect(response?.status()).toBe(200);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("A citizen who left");
  await expect(page.getByRole("alert")).toHaveText("This citizen exported its data and left the city. Nothing else about it is shown here.");
  await expect(page.getByRole("region")).toHaveCount(0);
  expect(await (await request.get(`/peers/${exported.did}`)).text()).not.toContain(exported.name);
});

test("no page of the states city shows a secret, the clinic's words or replies or key, a claimed name, or the exported citizen's name", async ({ request }) => {
  const { never, present, away, returned } = seed();
  expect(never.length).toBeGreaterThan(10);
  let html = "";
  const citizens = [present, away, returned, seed().exported].map((c) => `/peers/${c.did}`);
  for (const p of [...STATES_PATHS, ...citizens, "/doors", "/log?after=1", "/peers?present=1", "/ward?limit=1"]) html += await (await request.get(p)).text();
  for (const name of [present.name, away.name, returned.name]) expect(html, "the citizens in the directory are on the pages").toContain(name);
  for (const text of never) expect(html.includes(text), `a page shows what it must not: ${text.slice(0, 16)}...`).toBe(false);
  expect(html).not.toMatch(/city_(sk|st|rc)_[A-Za-z0-9_-]{6}/);
  expect(html).not.toContain("plat-states-model");
});

axeTests("states", STATES_PATHS);
axeTests("states citizen", () => [seed().away, seed().exported].map((c) => `/peers/${c.did}`));

// CITY_PLAT_DOCS=1 keeps the README's pictures of the states too.
const statesDocs = process.env.CITY_PLAT_DOCS === "1" ? path.join(process.cwd(), "docs", "screenshots") : null;
screenshotTests("states", STATES_PATHS, async (page, name) => {
  if (!statesDocs) return;
  mkdirSync(statesDocs, { recursive: true });
  await page.screenshot({ path: path.join(statesDocs, `${name}.png`), fullPage: true });
});
