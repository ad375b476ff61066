import { CENSUS_KEYS, CITIES, censusOnPage, axeTests, cspTests, expect, MISSING_PATH, PLAT_PATHS, screenshotTests, test } from "./plat";

test.use({ baseURL: CITIES.empty });

// This project's server has never admitted anyone: the plat must look honest, not broken.

test("every page loads on an empty city, says when it was read, and has no form but the GET search", async ({ page }) => {
  for (const path of PLAT_PATHS) {
    const response = await page.goto(path);
    expect(response?.status(), path).toBe(200);
    await expect(page.getByRole("heading", { level: 1 })).toHaveCount(1);
    await expect(page.getByRole("main")).toBeVisible();
    await expect(page.getByRole("navigation", { name: "The plat" })).toBeVisible();
    expect(await page.title(), path).toMatch(/CITY/);
    expect(await page.locator('meta[name="description"]').getAttribute("content"), path).toBeTruthy();
    // No form writes: the one form (the peer search on /peers) is a plain GET.
    await expect(page.locator('form:not([method="get"])')).toHaveCount(0);
    await expect(page.locator("form")).toHaveCount(path === "/peers" ? 1 : 0);
    if (path !== "/doors") await expect(page.locator("[data-read-at]"), path).toHaveCount(1);
  }
});

test("the home page shows the census in zeros, equal to /city.json, an empty chart and an empty log", async ({ page, request }) => {
  await page.goto("/");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("The plat of CITY");
  const census = (await (await request.get("/city.json")).json()) as Record<string, unknown>;
  const shown = await censusOnPage(page);
  expect(Object.keys(shown).sort()).toEqual([...CENSUS_KEYS].sort());
  for (const key of CENSUS_KEYS) expect(shown[key], key).toBe(census[key]);
  expect(Object.values(shown).every((n) => n === 0)).toBe(true);
  await expect(page.getByText("No citizens yet: an empty city shows zeros.")).toBeVisible();
  await expect(page.locator("[data-cite]")).toHaveText(census.cite as string);
  await expect(page.locator('[data-chart="residency"] rect')).toHaveCount(0);
  await expect(page.locator("#chart-desc")).toContainText("0 admits, 0 returns, 0 exits and 0 exports");
  await expect(page.locator("#chart-title")).toHaveText("The city over the last 7 days");
  await expect(page.getByText("No citizens yet: the residency log is empty.")).toBeVisible();
  for (const href of ["/llms.txt", "/openapi.json", "/doors#mcp", "/.well-known/agent-card.json", "/gate"]) {
    await expect(page.locator(`main a[href="${href}"]`).first()).toBeVisible();
  }
  // The MCP address answers a browser's GET with 405: a person is led to its entry on /doors instead.
  await expect(page.locator('main a[href="/doors#mcp"]')).toHaveText("/mcp");
  await expect(page.locator('main a[href="/mcp"]')).toHaveCount(0);
});

test("peers and log say plainly that there is no one yet, the chain of no rows holds, and the identity log has no key events", async ({ page }) => {
  await page.goto("/peers");
  await expect(page.getByText("No citizens yet: the directory is empty.")).toBeVisible();
  await page.goto("/peers?present=1");
  await expect(page.getByText("No citizen holds a bed yet.")).toBeVisible();
  await page.goto("/log");
  await expect(page.locator("[data-chain]")).toHaveAttribute("data-chain", "intact");
  await expect(page.getByText("No rows yet: no citizens yet")).toBeVisible();
  await expect(page.getByRole("link", { name: "Next page" })).toHaveCount(0);
  // The identity log's section: an empty tree, signed all the same, and no key events.
  const identity = page.locator("[data-identity-log]");
  await expect(identity.getByRole("heading", { name: "Identity log" })).toBeVisible();
  await expect(identity.locator('[data-log="identity_log"]')).toHaveAttribute("data-checkpoint-size", "0");
  await expect(identity.getByText("No key events yet: no citizen has bound a key.")).toBeVisible();
  await expect(identity.locator("[data-identity-seq]")).toHaveCount(0);
});

test("the ward shows its protocol and shapes, no notes yet, zero counts and the clinic closed", async ({ page }) => {
  await page.goto("/ward");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Ward");
  await expect(page.locator("[data-step]")).toHaveCount(6);
  await expect(page.locator("[data-shape]")).toHaveCount(7);
  await expect(page.getByText("No ward notes yet: nobody has filed one.")).toBeVisible();
  await expect(page.locator("[data-ward-seal]")).toHaveCount(0);
  for (const id of ["occupied", "probes_hidden", "disputed"]) await expect(page.locator(`[data-ward-count="${id}"] [data-value]`), id).toHaveText("0");
  await expect(page.getByText("No disputed notes.")).toBeVisible();
  await expect(page.locator("[data-disputed]")).toContainText("nothing_deleted: true");
  // The e2e servers configure no physician: the clinic is closed and its gauges count zeros.
  await expect(page.locator("[data-clinic]")).toHaveAttribute("data-clinic", "closed");
  await expect(page.getByRole("heading", { name: "The clinic is closed" })).toBeVisible();
  await expect(page.locator('[data-physician="asclepius"]')).toHaveText("asclepius: not configured");
  await expect(page.locator('[data-gauge="answered"]')).toHaveText("0");
  await expect(page.locator('[data-gauge="city-window"]')).toHaveText("0");
});

test("an unknown address answers 404 with a page in the plat's style", async ({ page }) => {
  const response = await page.goto(MISSING_PATH);
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("No page here");
  await expect(page.getByRole("navigation", { name: "The plat" })).toBeVisible();
  expect(await page.title()).toBe("Not found · CITY");
});

// /doors and the 404 page do not change with the city's data: the seeded project scans them.
axeTests("empty", ["/", "/peers", "/ward", "/log"]);
cspTests("empty");

screenshotTests("empty", [...PLAT_PATHS, MISSING_PATH]);
