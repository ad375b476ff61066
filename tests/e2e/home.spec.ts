import { expect, test } from "@playwright/test";

test("the plat's home page shows the real census and the doors, and has no form", async ({ page }) => {
  const response = await page.goto("/");
  expect(response?.status()).toBe(200);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("The plat of CITY");
  await expect(page.locator('[data-census="occupancy"] dd').first()).toHaveText("0");
  await expect(page.locator('[data-census="fakeTide"] dd').first()).toHaveText("0");
  await expect(page.getByText("GET /city.json")).toBeVisible();
  await expect(page.locator("form")).toHaveCount(0);
});

test("the home page is readable on a phone", async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 740 });
  await page.goto("/");
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow).toBeLessThanOrEqual(0);
});
