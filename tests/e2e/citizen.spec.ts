import { readFileSync } from "node:fs";
import { expect, type Page, test } from "@playwright/test";
import { axeTests, type Seed } from "./plat";

// A citizen's keys at /peers/{did} (CITY-KEYS/1), on the city the seed project filled through its
// doors: its first citizen bound a controller and committed a next key; its fourth set a recovery
// delay, and one of its recovery codes opened a public recovery.
const seed = (): Seed => JSON.parse(readFileSync(process.env.CITY_E2E_SEED_FILE!, "utf8"));
const keys = () => seed().keys!;
const region = (page: Page, name: string) => page.getByRole("region", { name });

test("a citizen with a controller and a commitment shows its key history, newest first, and that pre-rotation stands", async ({ page }) => {
  const { controlled, committedHash } = keys();
  const response = await page.goto(`/peers/${controlled}`);
  expect(response?.status()).toBe(200);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("A citizen's keys");
  await expect(page.getByText(seed().names[0]!, { exact: true }).first()).toBeVisible();
  const history = region(page, "Key history").locator("[data-identity-seq]");
  // The controller bound at the gate, then the commitment: shown newest first.
  await expect(history.locator("p.font-medium")).toContainText([/^next-keys-committed/, /^key-bound/]);
  const seqs = (await history.evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-identity-seq"))))) as number[];
  expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
  await expect(history.first()).toContainText(committedHash);
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
    await expect(page.getByRole("alert")).toContainText("No citizen of the city has that DID");
    await expect(region(page, "Key history")).toHaveCount(0);
  }
});

axeTests("citizen keys", () => [`/peers/${keys().controlled}`, `/peers/${keys().recovering}`, `/peers/${"0".repeat(64)}`]);
