// The dashboard, the API reference and the event catalogue in a real browser: Playwright driving
// Debian's Chromium against a real server. Each state is saved as a screenshot in
// test-output/screenshots. Skipped (with the reason) where no Chromium is installed; CI installs it.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UI_DIST } from "../../src/server/ui.ts";
import { ROOT, startTestServer, unique, type TestServer } from "../server/helpers.ts";

const CHROMIUM = process.env.FLOWGATE_CHROMIUM ?? "/usr/bin/chromium";
const SHOTS = join(ROOT, "test-output/screenshots");
const hasChromium = existsSync(CHROMIUM);
/** Headless, and quiet on the network: without the background-networking flags Chromium reaches for Google's hosts, which a closed network refuses. */
const LAUNCH = { executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"] };
if (!hasChromium) console.warn(`dashboard browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set FLOWGATE_CHROMIUM)`);

/** A sampler whose image waits `seconds` before it is saved: previews arrive, then the job holds still. */
function samplerGraph(steps: number, seconds: number): Record<string, unknown> {
  return {
    "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e9), steps, width: 512, height: 384 }, _meta: { title: "sampler" } },
    "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "dashboard" } },
  };
}

function delayGraph(seconds: number): Record<string, unknown> {
  return {
    "1": { class_type: "PrimitiveString", inputs: { value: unique("ui") } },
    "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
    "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
  };
}

describe.skipIf(!hasChromium)("dashboard in Chromium", { timeout: 90_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  /** Requests the pages made to anything but the test server (there must be none: offline). */
  const foreign: string[] = [];

  beforeAll(async () => {
    // The UI under test is the current source: build it when no build is there yet.
    if (!existsSync(join(UI_DIST, "index.html"))) await build({ configFile: join(ROOT, "ui/vite.config.ts"), logLevel: "warn" });
    await mkdir(SHOTS, { recursive: true });
    server = await startTestServer();
    browser = await chromium.launch(LAUNCH);
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on("request", (r) => {
      if (!r.url().startsWith(server.url) && !r.url().startsWith("data:")) foreign.push(r.url());
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });

  it("submits a graph from the page, shows progress and previews as they arrive, then the output image", async () => {
    await page.goto(`${server.url}/#/submit`);
    await expect.poll(() => page.locator("h1").textContent()).toBe("Submit a workflow");
    await page.getByLabel("Workflow (API format JSON)").fill(JSON.stringify(samplerGraph(120, 4), null, 2));
    await shot("01-submit");
    await page.getByRole("button", { name: "Submit job" }).click();

    await page.waitForURL(/#\/jobs\/[0-9a-f-]{36}$/);
    await expect.poll(() => page.locator("#job-step").textContent(), { timeout: 20_000 }).toMatch(/node 1 FlowgateSampler · step \d+\/120/);
    const preview = page.locator("#job-preview");
    await preview.waitFor({ state: "visible", timeout: 20_000 });
    await expect.poll(() => preview.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    await expect.poll(() => page.locator("#job-status").textContent()).toBe("running");
    const pct = async () => Number((await page.locator(".progress-pct").first().textContent())!.replace("%", ""));
    await expect.poll(async () => (await pct()) > 0 && (await pct()) < 100).toBe(true);
    await shot("02-job-running");

    await expect.poll(() => page.locator("#job-status").textContent(), { timeout: 30_000 }).toBe("succeeded");
    const output = page.locator('#job-outputs li[data-output-type="image"] img');
    await output.waitFor({ state: "visible" });
    await expect.poll(() => output.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(512);
    expect(await page.locator(".progress-pct").first().textContent()).toBe("100%");
    await shot("03-job-succeeded");
  });

  it("shows the contract's validation errors per node", async () => {
    await page.goto(`${server.url}/#/submit`);
    await page.getByLabel("Workflow (API format JSON)").fill(
      JSON.stringify({ "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1 } }, "2": { class_type: "NoSuchNode", inputs: {} }, "3": { class_type: "SaveImage", inputs: { images: ["1", 0] } } }),
    );
    await page.getByRole("button", { name: "Submit job" }).click();
    const errors = page.locator("#node-errors");
    await errors.waitFor();
    expect(await page.locator("#submit-errors").textContent()).toContain("invalid_workflow");
    expect(await errors.locator('li[data-node="2"]').textContent()).toMatch(/Node 2.*NoSuchNode.*unknown_class/s);
    await shot("04-submit-invalid");
  });

  it("cancels a long job from its page", async () => {
    await page.goto(`${server.url}/#/submit`);
    await page.getByLabel("Workflow (API format JSON)").fill(JSON.stringify(delayGraph(60)));
    await page.getByRole("button", { name: "Submit job" }).click();
    await page.waitForURL(/#\/jobs\//);
    await expect.poll(() => page.locator("#job-status").textContent()).toBe("running");
    await page.getByRole("button", { name: "Cancel job" }).click();
    await expect.poll(() => page.locator("#job-status").textContent(), { timeout: 15_000 }).toBe("canceled");
    expect(await page.getByRole("button", { name: "Cancel job" }).count()).toBe(0);
    await shot("05-job-canceled");
  });

  it("lists the jobs newest first and follows new ones live", async () => {
    const done = await server.api.submit({ "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0x4f46e5 } }, "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "listed" } } });
    await server.api.waitTerminal(done.id);
    await page.goto(`${server.url}/`);
    const rows = page.locator("table.jobs tbody tr");
    await expect.poll(() => page.locator(`tr[data-job-id="${done.id}"]`).getAttribute("data-status")).toBe("succeeded");
    const before = await rows.count();
    // A job submitted elsewhere appears, runs and ends without a reload.
    const job = await server.api.submit(delayGraph(8)); // longer than the list's 3 s refresh
    const row = page.locator(`tr[data-job-id="${job.id}"]`);
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 15_000 }).toBe("running");
    expect(await rows.first().getAttribute("data-job-id")).toBe(job.id);
    expect(await rows.count()).toBe(before + 1);
    await shot("06-jobs-running");
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 20_000 }).toBe("succeeded");
    const statuses = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-status")));
    expect(statuses.filter((x) => x === "succeeded").length).toBeGreaterThanOrEqual(2);
    await shot("07-jobs");
  });

  it("renders the API reference and the event catalogue offline", async () => {
    await page.goto(`${server.url}/docs`);
    await expect.poll(() => page.getByText("Submit a workflow", { exact: false }).count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await shot("08-docs");
    await page.goto(`${server.url}/docs/events`);
    await page.getByRole("heading", { name: "Job event stream (SSE)" }).waitFor();
    expect(await page.locator("#jobEvents-preview").textContent()).toContain("data_base64");
    await shot("09-events");
    expect(foreign).toEqual([]);
  });
});

describe.skipIf(!hasChromium)("dashboard with a token", { timeout: 90_000 }, () => {
  it("asks for the token on 401, keeps it in the tab and sends it as a bearer token", async () => {
    const server = await startTestServer({ flags: ["--token", "s3cret-token"] });
    const browser = await chromium.launch(LAUNCH);
    try {
      await server.api.submit(delayGraph(0.1), {}).catch(() => undefined);
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(`${server.url}/`);
      const dialog = page.getByRole("dialog", { name: "API token" });
      await dialog.waitFor();
      await page.getByLabel("Token or API key").fill("s3cret-token");
      await page.screenshot({ path: join(SHOTS, "10-token.png") });
      await page.getByRole("button", { name: "Save" }).click();
      await expect.poll(() => page.locator("#banner").isHidden()).toBe(true);
      await expect.poll(() => page.locator(".empty, table.jobs tbody tr").count()).toBeGreaterThan(0);
      expect(await page.evaluate(() => sessionStorage.getItem("flowgate.token"))).toBe("s3cret-token");
      expect(await page.evaluate(() => localStorage.getItem("flowgate.token"))).toBeNull();
      expect(await page.locator("#token-button").textContent()).toBe("Token: set");
    } finally {
      await browser.close();
      await server.stop();
    }
  });
});
