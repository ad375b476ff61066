import AxeBuilder from "@axe-core/playwright";
import { test as base, expect, type Page, type TestInfo } from "@playwright/test";

/** Every page of the plat, and an address that is none of them (the 404 page). */
export const PLAT_PATHS = ["/", "/peers", "/ward", "/log", "/doors"] as const;
export const MISSING_PATH = "/no-such-place";

/**
 * The three cities of playwright.config.ts, each spec file's own (`test.use({ baseURL })`): one
 * project runs them all, so one worker serves files of every city.
 */
export const CITIES = {
  /** Never admits anyone. */
  empty: `http://127.0.0.1:${process.env.CITY_E2E_EMPTY_PORT}`,
  /** Filled through its doors by seed.setup.ts. */
  seeded: `http://127.0.0.1:${process.env.CITY_E2E_PORT}`,
  /** On PostgreSQL, filled and edited by states.setup.ts. */
  states: `http://127.0.0.1:${process.env.CITY_E2E_STATES_PORT}`,
};

/** How many citizens seed.setup.ts admits, and what it leaves for the checks that follow. */
export const CITIZENS = 7;
export interface Seed {
  /** Names the pages must show. */
  names: string[];
  /** Their origins, in the same order. */
  origins: string[];
  dids: string[];
  /** Secrets, tokens, recovery codes, mail and shelf content the pages must never show. */
  secrets: string[];
  /** The public ward notes filed through the door, oldest first, which /ward must show newest first. */
  wardNotes: { state: string; note: string; seal?: number; did?: string }[];
  /** CITY-KEYS/1: a citizen with a controller and a commitment, and one with a recovery open (and when it opens). */
  keys?: { controlled: string; committedHash: string; recovering: string; opensAfter: string };
}

export const SCHEMES = ["light", "dark"] as const;

/**
 * The time of a test that walks every page (axe, screenshots). Idle, such a test takes 10 to 20 s;
 * in CI it shares two cores with the other lanes, and a 90 s limit ran out (axe on six pages).
 */
export const LOOP_TIMEOUT = 180_000;

export const CENSUS_KEYS = ["occupancy", "citizens", "house", "outside", "hotelGuests", "lotsOccupied", "fakeTide", "tide"];

/**
 * Serious and critical accessibility findings of axe-core on the page as it is. Legacy mode: axe
 * runs in the page alone, without the blank page AxeBuilder otherwise opens to merge the results
 * of frames, which costs a second injection of axe's half a megabyte (measured: 1.0 s against
 * 1.8 to 2.9 s a page here). The plat has no frames, and the check says so, so nothing goes untested.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  expect(page.frames(), "a plat page holds no frame (axe runs in legacy mode)").toHaveLength(1);
  const { violations } = await new AxeBuilder({ page })
    .setLegacyMode(true)
    .options({ resultTypes: ["violations"] })
    .analyze();
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/**
 * The plat's `test`, which every spec file takes (with its `expect`): Playwright's, plus one page
 * with JavaScript on for every axe test of a worker (axeTests). A test's own page is a new browser
 * context and renderer process, which cost 14 CPU-s over the suite's 32 axe tests here (100 against
 * 86 CPU-s for them all, process accounting, back to back) where a page load costs a fraction of one.
 * One `test` for all: a worker serves tests of one set of worker fixtures only, so while the axe
 * tests had an extended `test` of their own and the other tests Playwright's, a project mixing both
 * started a new worker (a Node process and a browser) at each switch between them. The page has no
 * base URL: a worker serves every city (CITIES), and each test goes to its own file's.
 */
export const test = base.extend<object, { axePage: Page }>({
  axePage: [
    async ({ browser }, use) => {
      const context = await browser.newContext({ javaScriptEnabled: true });
      await use(await context.newPage());
      await context.close();
    },
    { scope: "worker" },
  ],
});
export { expect };

/**
 * axe-core over the plat's pages (all of them and the 404 page unless told otherwise), in each colour
 * scheme: one test per page and scheme, so that a slow page (/doors: 4,200 elements, 7 s of axe idle
 * here) spends its own time limit and not its neighbours' (both six-page loops of the seeded city ran
 * out of 180 s in a CI run on a loaded machine). Paths known only once a seed ran are given as a
 * function and walked in one test. axe runs in the page, so these tests turn JavaScript on (the pages
 * need none).
 */
export function axeTests(label: string, paths: readonly string[] | (() => readonly string[]) = [...PLAT_PATHS, MISSING_PATH]): void {
  for (const colorScheme of SCHEMES) {
    const check = async (page: Page, baseURL: string | undefined, path: string) => {
      await page.emulateMedia({ colorScheme });
      await page.goto(new URL(path, baseURL).href);
      // <details> hides the chart's table and each door's words until opened; axe checks them open.
      await page.locator("details").evaluateAll((all) => all.forEach((d) => d.setAttribute("open", "")));
      expect(await seriousViolations(page), `${path} in the ${colorScheme} scheme`).toEqual([]);
    };
    if (typeof paths === "function") {
      test(`axe finds no serious or critical violation on any ${label} page in the ${colorScheme} scheme`, async ({ axePage, baseURL }) => {
        test.setTimeout(LOOP_TIMEOUT);
        for (const path of paths()) await check(axePage, baseURL, path);
      });
      continue;
    }
    for (const path of paths) {
      test(`axe finds no serious or critical violation on the ${label} ${path} in the ${colorScheme} scheme`, async ({ axePage, baseURL }) => {
        test.setTimeout(LOOP_TIMEOUT);
        await check(axePage, baseURL, path);
      });
    }
  }
}

/**
 * Every page and the 404 page with JavaScript on, as a visitor's browser loads them, then one
 * client-side navigation (which loads more of Next's chunks): zero Content Security Policy
 * violations, counted both from the page's securitypolicyviolation events and the console, and
 * no page error (a page that fails to hydrate throws one).
 */
export function cspTests(label: string): void {
  test.describe(() => {
    test.use({ javaScriptEnabled: true });
    test(`no ${label} page violates its Content Security Policy or fails to hydrate, scripts on`, async ({ page }) => {
      test.setTimeout(LOOP_TIMEOUT);
      const violations: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error" && /Content Security Policy/i.test(message.text())) violations.push(message.text());
      });
      page.on("pageerror", (error) => violations.push(`page error: ${error.message}`));
      await page.addInitScript(() =>
        document.addEventListener("securitypolicyviolation", (e) =>
          console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI} ${e.sample}`),
        ),
      );
      for (const path of [...PLAT_PATHS, MISSING_PATH]) {
        await page.goto(path);
        await page.waitForLoadState("networkidle");
      }
      await page.goto("/");
      await page.getByRole("navigation", { name: "The plat" }).getByRole("link", { name: "Ward" }).click();
      await expect(page).toHaveURL(/\/ward$/);
      await expect(page.getByRole("heading", { level: 1 })).toHaveText("Ward");
      await page.waitForLoadState("networkidle");
      expect(violations).toEqual([]);
    });
  });
}

/** Nothing wider than a 375 px phone: no sideways scrolling. */
export async function expectNoSidewaysScroll(page: Page, label: string): Promise<void> {
  const { overflow, culprits } = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > width + 0.5);
    return {
      overflow: document.documentElement.scrollWidth - width,
      culprits: wide.slice(-3).map((e) => `<${e.tagName.toLowerCase()}> ${e.textContent?.slice(0, 60)}`),
    };
  });
  expect(overflow, `${label} scrolls sideways by ${overflow} px: ${culprits.join(" | ")}`).toBeLessThanOrEqual(0);
}

/** A full-page screenshot saved in the test's output folder and attached to its report. */
export async function attachScreenshot(page: Page, testInfo: TestInfo, name: string): Promise<void> {
  const file = testInfo.outputPath(`${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  await testInfo.attach(name, { path: file, contentType: "image/png" });
}

export const WIDTHS = [375, 1280] as const;

/**
 * One test per width over the given pages: each readable without sideways scrolling, its
 * full-page screenshot attached (`<label>-<page>-<width>`); `after` may keep the picture too.
 */
export function screenshotTests(label: string, paths: readonly string[], after?: (page: Page, name: string) => Promise<void>): void {
  for (const width of WIDTHS) {
    test(`every ${label} page is readable at ${width} px (screenshots attached)`, async ({ page }, testInfo) => {
      test.setTimeout(LOOP_TIMEOUT);
      await page.setViewportSize({ width, height: 800 });
      for (const path of paths) {
        await page.goto(path);
        await expectNoSidewaysScroll(page, `${path} at ${width} px`);
        const name = `${label}-${path === "/" ? "home" : path.slice(1)}-${width}`;
        await attachScreenshot(page, testInfo, name);
        await after?.(page, name);
      }
    });
  }
}

/** The census as the home page shows it, key by key. */
export async function censusOnPage(page: Page): Promise<Record<string, number>> {
  const shown: Record<string, number> = {};
  for (const card of await page.locator("[data-census]").all()) {
    shown[(await card.getAttribute("data-census"))!] = Number(await card.locator("[data-value]").innerText());
  }
  return shown;
}

/** Walks a paged list by its "Next page" links, gathering an attribute of its rows page by page. */
export async function walkPages(page: Page, start: string, rowAttribute: string): Promise<string[][]> {
  const pages: string[][] = [];
  await page.goto(start);
  for (;;) {
    pages.push(await page.locator(`[${rowAttribute}]`).evaluateAll((rows, attr) => rows.map((r) => r.getAttribute(attr)!), rowAttribute));
    const next = page.getByRole("link", { name: "Next page" });
    if ((await next.count()) === 0) break;
    expect(pages.length, "paging never ends").toBeLessThan(50);
    // Follow the link's own address (a full page load: the plat needs no JavaScript).
    await page.goto((await next.getAttribute("href"))!);
  }
  await expect(page.getByText("This is the last page.")).toBeVisible();
  return pages;
}

/** A citizen of the states city, by what became of it. */
export interface Resident {
  name: string;
  did: string;
}

/** What the states seed (states.setup.ts) leaves for states.spec.ts. */
export interface StatesSeed {
  /** Bound with a bed (and the clinic's patient). */
  present: Resident;
  /** Left: away, no bed. */
  away: Resident;
  /** Left and came back: bound with a bed again. */
  returned: Resident;
  /** Exported: gone from the directory and the census' citizens; its log rows stay. */
  exported: Resident;
  /** The log row the owner edited with the append-only trigger off, and the DID written into it. */
  broken: { seq: number; did: string };
  /** The public note filed through the door, and the one the owner inserted with a claimed name and no proof. */
  wardNote: { seal: number; state: string; note: string };
  disputed: { seal: number; claimedName: string };
  /** The clinic's visits: answered, failed at the provider, refused over the daily cap. */
  clinic: { answered: number; failed: number; refused: number };
  /** Text no page of the states city may show: secrets, the clinic's words and replies, its API key, the claimed name. */
  never: string[];
}

/**
 * The words of `text` that the page breaks across lines inside each element matching `selector`:
 * the text is found as it is rendered (across text nodes, so a <wbr> between a domain's labels
 * does not hide it), and a word (a run of letters and digits, so a domain's labels between its
 * dots) is broken when its glyphs lie on more than one line. Words of scripts written without
 * spaces (Han, kana) may break anywhere and are left out. Text not found is reported as such.
 */
export async function wordsBrokenAcrossLines(page: Page, selector: string, text: string): Promise<string[]> {
  return page.locator(selector).evaluateAll((roots, wanted) => {
    const broken: string[] = [];
    for (const root of roots) {
      const nodes: { node: Text; from: number }[] = [];
      let all = "";
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        nodes.push({ node: node as Text, from: all.length });
        all += node.textContent;
      }
      const at = all.indexOf(wanted);
      if (at < 0) {
        broken.push(`(not found: ${wanted})`);
        continue;
      }
      const point = (offset: number): [Text, number] => {
        const hit = nodes.findLast((n) => n.from <= offset)!;
        return [hit.node, offset - hit.from];
      };
      for (const word of wanted.matchAll(/[\p{L}\p{N}]+/gu)) {
        if (/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u.test(word[0])) continue;
        const range = document.createRange();
        range.setStart(...point(at + word.index!));
        range.setEnd(...point(at + word.index! + word[0].length - 1));
        range.setEnd(range.endContainer, range.endOffset + 1);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(word[0]);
      }
    }
    return broken;
  }, text);
}

/** The rendered height in CSS pixels of every piece of text under `selector` smaller than `min` (their text). */
export async function textSmallerThan(page: Page, selector: string, min: number): Promise<string[]> {
  return page.locator(selector).evaluateAll((roots, least) => {
    const small: string[] = [];
    for (const root of roots) {
      if (!(root as HTMLElement).checkVisibility?.()) continue;
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.textContent!.trim()) continue;
        const parent = node.parentElement!;
        // Text an SVG scales: its font size times the scale the SVG is drawn at.
        const ctm = parent instanceof SVGGraphicsElement ? parent.getScreenCTM() : null;
        if (parent.closest("title, desc, .sr-only") || !parent.checkVisibility()) continue;
        const size = parseFloat(getComputedStyle(parent).fontSize) * (ctm ? Math.hypot(ctm.a, ctm.b) : 1);
        if (size < least) small.push(`${node.textContent!.trim().slice(0, 20)} (${size.toFixed(1)} px)`);
      }
    }
    return small;
  }, min);
}
