// The dashboard, the API reference and the event catalogue in a real browser: Playwright driving
// Debian's Chromium against a real server. Each state is saved as a screenshot in
// test-output/screenshots. Skipped (with the reason) where no Chromium is installed; CI installs it.
// One file for every browser test: the UI build they share is made once, never by two at once.
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ROOT, startTestServer, unique, type TestServer } from "../server/helpers.ts";
import { DOC_SHOTS, hasChromium, LAUNCH, prepareUi, SHOTS } from "./browser.ts";
import { delayGraph as delayGraphOf } from "../fixtures/graphs.ts";
import { Gates } from "../fixtures/gate-node.ts";
import { proxyTo } from "../faults/tcp-proxy.ts";

// Every wait here is for a state the page reaches (a load, a render, a job's step). On a busy
// machine reaching it can take seconds, so no wait is bounded by vitest's default of one second;
// a state that never comes still fails the test.
vi.setConfig({ expect: { poll: { timeout: 10_000 } } });

/**
 * A sampler whose image waits before it is saved, `seconds` or until the test opens `gate`
 * (a server with Gates' node): previews arrive, then the job holds still.
 */
/**
 * A sampler (node 1) held after it by `hold` (node 2) and saved (node 3). With `startGate`, the
 * sampler's seed first passes that gate (nodes 4 and 5), so a page can be open before it samples.
 */
function samplerGraph(steps: number, hold: { seconds: number } | { gate: string }, startGate?: string): Record<string, unknown> {
  const seed = Math.floor(Math.random() * 1e9);
  return {
    "1": { class_type: "FlowgateSampler", inputs: { seed: startGate ? ["5", 0] : seed, steps, width: 512, height: 384 }, _meta: { title: "sampler" } },
    "2":
      "gate" in hold
        ? { class_type: "TestGate", inputs: { value: ["1", 0], gate: hold.gate } }
        : { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: hold.seconds } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "dashboard" } },
    ...(startGate && {
      "4": { class_type: "PrimitiveInt", inputs: { value: seed } },
      "5": { class_type: "TestGate", inputs: { value: ["4", 0], gate: startGate } },
    }),
  };
}

function delayGraph(seconds: number): Record<string, unknown> {
  return delayGraphOf(seconds, unique("ui"));
}

/** A text that passes gate `gate` (a server with Gates' node): the job runs until the test opens it. */
function gatedGraph(gate: string): Record<string, unknown> {
  return {
    "1": { class_type: "PrimitiveString", inputs: { value: gate } },
    "2": { class_type: "TestGate", inputs: { value: ["1", 0], gate } },
    "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
  };
}

/**
 * From now on, keeps every text the job page's step line shows, in order (read with stepLines):
 * a line the page draws for a moment, such as a fast sampler's steps, is seen however late the
 * test looks. Hash routes keep the document, so the record spans the submit and job pages.
 */
function recordStepLines(page: Page): Promise<void> {
  return page.evaluate(() => {
    const w = window as unknown as { stepLines: string[] };
    w.stepLines = [];
    new MutationObserver(() => {
      const text = document.getElementById("job-step")?.textContent;
      if (typeof text === "string" && text !== w.stepLines.at(-1)) w.stepLines.push(text);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

function stepLines(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { stepLines: string[] }).stepLines);
}

describe.skipIf(!hasChromium)("dashboard in Chromium", { timeout: 90_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  /** Requests the pages made to anything but the test server (there must be none: offline). */
  const foreign: string[] = [];
  const gates = new Gates();

  beforeAll(async () => {
    // The UI under test is the current source: built when missing or older than ui/.
    await prepareUi();
    server = await startTestServer({ engine: { extraNodes: [gates.node] } });
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
    const gate = unique("sampled");
    const start = unique("start");
    // Steps enough that sampling spans many of the page's frames (120 took about one: its last
    // step and the next node's start could land in the same frame, and no step was ever drawn).
    await page.getByLabel("Workflow (API format JSON)").fill(JSON.stringify(samplerGraph(1200, { gate }, start), null, 2));
    await page.getByLabel("Labels (optional)").fill("project=ui run=1");
    await shot("01-submit");
    await recordStepLines(page);
    await page.getByRole("button", { name: "Submit job" }).click();

    await page.waitForURL(/#\/jobs\/[0-9a-f-]{36}$/);
    // The sampler starts only once the page follows the job (it shows the job held at the first
    // gate), so its steps reach the page's stream rather than the gap before the stream opens.
    await expect.poll(() => page.locator("#job-step").textContent(), { timeout: 20_000 }).toBe("node 5 TestGate · 1/5 nodes");
    gates.open(start);
    // The sampler's steps are on the page for as long as it samples, a second or two: what the
    // page drew is read from its record, not caught by polling (which a busy machine slows).
    await expect
      .poll(() => stepLines(page), { timeout: 20_000 })
      .toContainEqual(expect.stringMatching(/^node 1 FlowgateSampler · step \d+\/1200 · 2\/5 nodes$/));
    // Then the job holds at the gate, running, until the page has been looked at.
    const preview = page.locator("#job-preview");
    await preview.waitFor({ state: "visible", timeout: 20_000 });
    await expect.poll(() => preview.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    await expect.poll(() => page.locator("#job-status").textContent()).toBe("running");
    // The labels typed on the submit page are the job's.
    expect(await page.locator("#job-labels li").allTextContents()).toEqual(["project=ui", "run=1"]);
    const pct = async () => Number((await page.locator(".progress-pct").first().textContent())!.replace("%", ""));
    await expect.poll(async () => (await pct()) > 0 && (await pct()) < 100).toBe(true);
    await expect.poll(() => page.locator("#job-step").textContent(), { timeout: 20_000 }).toBe("node 2 TestGate · 3/5 nodes");
    await shot("02-job-running");

    gates.open(gate);
    await expect.poll(() => page.locator("#job-status").textContent(), { timeout: 30_000 }).toBe("succeeded");
    const output = page.locator('#job-outputs li[data-output-type="image"] img');
    await output.waitFor({ state: "visible" });
    await expect.poll(() => output.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(512);
    expect(await page.locator(".progress-pct").first().textContent()).toBe("100%");
    // Finished: the output is the picture; the last live frame is gone rather than shown stale beside it.
    await expect.poll(() => page.locator("#job-preview").isVisible()).toBe(false);
    // The caption's facts ("1.2 MB", "node 3") each stay on one line.
    for (const fact of await page.locator("#job-outputs .output-meta .nowrap").all())
      expect(await fact.evaluate((el) => el.getClientRects().length), (await fact.textContent()) ?? "").toBe(1);
    await shot("03-job-succeeded");
  });

  it("shows the contract's validation errors per node", async () => {
    await page.goto(`${server.url}/#/submit`);
    await page.getByLabel("Workflow (API format JSON)").fill(
      JSON.stringify({
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1 } },
        "2": { class_type: "NoSuchNode", inputs: {} },
        "3": { class_type: "SaveImage", inputs: { images: ["1", 0] } },
      }),
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

  it("keeps following a job whose event stream was cut: says it is reconnecting, then shows the end and the outputs without a reload", async () => {
    // The page reaches the server through a TCP proxy, whose connections the test cuts (and whose
    // new ones it refuses until healed): a network blip, a proxy's idle timeout or a restart.
    const proxy = await proxyTo(server.url);
    const cutOff = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      const gate = unique("cut");
      const job = await server.api.submit(samplerGraph(3, { gate }));
      await cutOff.goto(`http://127.0.0.1:${proxy.port}/#/jobs/${job.id}`);
      // Followed over the stream up to the gate, where the job holds still, running.
      await expect.poll(() => cutOff.locator("#job-step").textContent(), { timeout: 20_000 }).toBe("node 2 TestGate · 1/3 nodes");
      expect(await cutOff.locator("#job-reconnecting").count()).toBe(0);
      await cutOff.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));

      proxy.cut();
      await cutOff.locator("#job-reconnecting").waitFor({ state: "visible" });
      expect(await cutOff.locator("#job-status").textContent()).toBe("running");
      await expect.poll(() => proxy.refused).toBeGreaterThan(0); // the page keeps trying
      // The job ends while the page is cut off: its status and output events are lost to it.
      gates.open(gate);
      await server.api.waitTerminal(job.id, 30_000);
      await shot("05a-job-reconnecting");
      proxy.heal();

      await expect.poll(() => cutOff.locator("#job-status").textContent(), { timeout: 30_000 }).toBe("succeeded");
      const output = cutOff.locator('#job-outputs li[data-output-type="image"] img');
      await output.waitFor({ state: "visible" });
      await expect.poll(() => output.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(512);
      expect(await cutOff.locator("#job-reconnecting").count()).toBe(0);
      expect(await cutOff.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
      await shot("05b-job-resumed");
    } finally {
      await cutOff.close();
      await proxy.close();
    }
  });

  it("lists the jobs newest first and follows new ones live", async () => {
    const done = await server.api.submit({
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0x4f46e5 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "listed" } },
    });
    await server.api.waitTerminal(done.id);
    await page.goto(`${server.url}/`);
    const rows = page.locator("table.jobs tbody tr");
    await expect.poll(() => page.locator(`tr[data-job-id="${done.id}"]`).getAttribute("data-status")).toBe("succeeded");
    const before = await rows.count();
    // A job submitted elsewhere appears, runs and ends without a reload; it holds at its gate
    // until the list has shown it running.
    const gate = unique("listed");
    const job = await server.api.submit(gatedGraph(gate));
    const row = page.locator(`tr[data-job-id="${job.id}"]`);
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 15_000 }).toBe("running");
    expect(await rows.first().getAttribute("data-job-id")).toBe(job.id);
    expect(await rows.count()).toBe(before + 1);
    await shot("06-jobs-running");
    gates.open(gate);
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 20_000 }).toBe("succeeded");
    const statuses = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-status")));
    expect(statuses.filter((x) => x === "succeeded").length).toBeGreaterThanOrEqual(2);
    await shot("07-jobs");
  });

  it("renders the API reference and the event catalogue offline", async () => {
    await page.goto(`${server.url}/docs`);
    await expect.poll(() => page.getByText("Submit a workflow", { exact: false }).count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await shot("08-docs");
    expect(await page.locator("#flowgate-dashboard-link").getAttribute("href")).toBe("/");
    // A first try of "List the caller's jobs" lists the caller's jobs, a new one among them: the
    // label filter is there to fill in, empty and not ticked (the schema's example label is not sent).
    const listed = await server.api.submit(delayGraph(0));
    await page.goto(`${server.url}/docs#tag/jobs/GET/api/v2/jobs`);
    const tryIt = page
      .locator("section", { hasText: "List the caller" })
      .last()
      .getByRole("button", { name: /Test Request/i })
      .first();
    await tryIt.waitFor({ timeout: 30_000 });
    await tryIt.click();
    const dialog = page.locator('[role="dialog"]').last();
    const labelFilter = dialog.locator('input[aria-label="Include metadata in request"]');
    await labelFilter.waitFor({ state: "attached" });
    expect(await labelFilter.isChecked()).toBe(false);
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === "/api/v2/jobs" && r.method() === "GET");
    await page.keyboard.press("Control+Enter");
    expect(new URL((await sent).url()).search).not.toContain("metadata");
    await dialog.getByText(listed.id).first().waitFor();
    await page.keyboard.press("Escape");
    // The served document is the contract as written; only the page's copy drops the filter's example.
    const served = parse(await (await fetch(`${server.url}/docs/openapi.yaml`)).text()) as {
      components: { schemas: Record<string, { examples?: unknown[] }> };
    };
    expect(served.components.schemas.JobMetadataFilter?.examples).toEqual([{ project: "cats" }]);
    await page.goto(`${server.url}/docs/events`);
    await page.getByRole("heading", { name: "Job event stream (SSE)" }).waitFor();
    expect(await page.locator("#jobEvents-preview").textContent()).toContain("data_base64");
    // One contract, one version on both pages; the description speaks of the page's world, not of files beside it.
    const { info } = parse(await (await fetch(`${server.url}/docs/openapi.yaml`)).text()) as { info: { version: string } };
    expect(await page.locator("h1").first().textContent()).toContain(`v${info.version}`);
    expect(await page.locator("main").textContent()).not.toContain("beside this file");
    await shot("09-events");
    expect(foreign).toEqual([]);
  });
});

describe.skipIf(!hasChromium)("dashboard with a token", { timeout: 90_000 }, () => {
  it("asks for the token on 401, keeps it in the tab and sends it as a bearer token", async () => {
    await prepareUi();
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

/** A page wider than the screen scrolls sideways: its document is wider than the viewport. */
async function sidewaysOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/** Whether an element lies within the viewport's width (reachable without scrolling sideways). */
async function withinWidth(page: Page, selector: string): Promise<boolean> {
  const box = await page.locator(selector).boundingBox();
  const width = page.viewportSize()!.width;
  return box !== null && box.x >= 0 && box.x + box.width <= width;
}

const VIEWPORTS = [
  { name: "desk", width: 1280, height: 800 },
  { name: "phone", width: 390, height: 844 },
] as const;

describe.skipIf(!hasChromium).each(VIEWPORTS)("what a user meets at $width x $height", { timeout: 120_000 }, (viewport) => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const shot = async (name: string, forDocs = false) => {
    await page.screenshot({ path: join(SHOTS, `${viewport.name}-${name}.png`) });
    if (forDocs && DOC_SHOTS) await page.screenshot({ path: join(DOC_SHOTS, `dashboard-${viewport.name}-${name}.png`) });
  };

  beforeAll(async () => {
    await prepareUi();
    // Previews on the stream faster than frames are drawn: the page itself must hold to one a frame.
    server = await startTestServer({ flags: ["--stream-preview-rate", "150"] });
    browser = await chromium.launch(LAUNCH);
    page = await browser.newPage({ viewport: { width: viewport.width, height: viewport.height } });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("shows a running job's live preview (above the workflow on a phone), one image a frame at most, and no page scrolls sideways", async () => {
    const job = await server.api.submit({
      "1": {
        class_type: "FlowgateSampler",
        inputs: { seed: Math.floor(Math.random() * 1e9), steps: 2000, width: 256, height: 192 },
        _meta: { title: "sampler" },
      },
      "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 60 } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "layout" } },
    });
    await page.goto(`${server.url}/#/jobs/${job.id}`);
    // Count the preview's image changes per animation frame while previews pour in.
    await page.evaluate(() => {
      const w = window as unknown as { frameNo: number; changes: Map<number, number> };
      w.frameNo = 0;
      w.changes = new Map();
      const tick = () => {
        w.frameNo++;
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      new MutationObserver((records) => {
        for (const r of records)
          if (r.target instanceof HTMLImageElement && r.target.id === "job-preview" && r.attributeName === "src")
            w.changes.set(w.frameNo, (w.changes.get(w.frameNo) ?? 0) + 1);
      }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["src"] });
    });
    const preview = page.locator("#job-preview");
    await preview.waitFor({ state: "visible", timeout: 20_000 });
    await expect.poll(() => preview.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0), { timeout: 20_000 }).toBe(true);
    await page.locator("#graph-title").waitFor();
    await expect.poll(() => page.evaluate(() => (window as unknown as { changes: Map<number, number> }).changes.size), { timeout: 20_000 }).toBeGreaterThan(3);
    const perFrame = await page.evaluate(() => Math.max(...(window as unknown as { changes: Map<number, number> }).changes.values()));
    expect(perFrame).toBe(1);
    const previewBox = (await preview.boundingBox())!;
    const graphBox = (await page.locator("#graph-title").boundingBox())!;
    if (viewport.name === "phone") {
      expect(previewBox.y).toBeLessThan(graphBox.y);
      expect(previewBox.y).toBeLessThan(viewport.height); // above the fold
    }
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    await shot("job-running", true);
    await server.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await expect.poll(() => page.locator("#job-status").textContent(), { timeout: 15_000 }).toBe("canceled");
  });

  it("lists jobs as a table at a desk and as cards on a phone, saying what each graph is; the nav fits", async () => {
    const done = await server.api.submit({
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0x4f46e5 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "listed" } },
    });
    await server.api.waitTerminal(done.id);
    await page.goto(`${server.url}/`);
    const row = page.locator(`tr[data-job-id="${done.id}"]`);
    await expect.poll(() => row.getAttribute("data-status")).toBe("succeeded");
    await expect.poll(() => row.locator(".workflow").textContent()).toBe("SaveImage · 2 nodes");
    // The sampler of the test before has a titled node: its title says what it is.
    await expect.poll(() => page.locator("td.workflow", { hasText: "sampler" }).count()).toBeGreaterThan(0);
    expect(await row.evaluate((tr) => getComputedStyle(tr).display)).toBe(viewport.name === "phone" ? "grid" : "table-row");
    const head = (await page.locator("table.jobs thead").boundingBox())!;
    expect(head.height > 1).toBe(viewport.name === "desk"); // on a phone, there for screen readers only
    for (const selector of ['nav a[href="/metrics"]', "#token-button", "#status-filter", "#label-filter", 'a.button[href="#/submit"]'])
      expect(await withinWidth(page, selector), selector).toBe(true);
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    await shot("jobs", true);
  });

  it("says a wrong token was refused, not that one is needed", async () => {
    const guarded = await startTestServer({ flags: ["--token", "right-token"] });
    const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } });
    try {
      const p = await context.newPage();
      await p.addInitScript(() => sessionStorage.setItem("flowgate.token", "wrong-token"));
      await p.goto(`${guarded.url}/`);
      await p.getByRole("dialog", { name: "API token" }).waitFor();
      await expect.poll(() => p.locator("#banner").textContent()).toMatch(/refused this token/);
      expect(await p.locator("#banner").textContent()).not.toMatch(/needs a token/);
      expect(await p.locator("#token-refused").textContent()).toBe("The server refused the token saved here.");
      expect(await p.locator("#token-button").textContent()).toBe("Token refused");
      await p.screenshot({ path: join(SHOTS, `${viewport.name}-token-refused.png`) });
      if (DOC_SHOTS) await p.screenshot({ path: join(DOC_SHOTS, `dashboard-${viewport.name}-token-refused.png`) });
      // The right one is taken and the page works.
      await p.getByLabel("Token or API key").fill("right-token");
      await p.getByRole("button", { name: "Save" }).click();
      await expect.poll(() => p.locator("#token-button").textContent()).toBe("Token: set");
      await expect.poll(() => p.locator("#banner").isHidden()).toBe(true);
    } finally {
      await context.close();
      await guarded.stop();
    }
  });

  it("shows each node's errors in words on the graph, the failing nodes marked", async () => {
    await page.goto(`${server.url}/#/submit`);
    await page.getByLabel("Workflow (API format JSON)").fill(
      JSON.stringify(
        {
          "1": { class_type: "EmptyImage", inputs: { width: 0, height: 8, batch_size: 1, color: 0 } },
          "2": { class_type: "SaveImag", inputs: { images: ["1", 0], filename_prefix: "x" } },
          "3": { class_type: "SaveImage", inputs: { image: ["1", 0], filename_prefix: "y" } },
          "4": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
        },
        null,
        2,
      ),
    );
    await page.getByRole("button", { name: "Submit job" }).click();
    const errors = page.locator("#node-errors");
    await errors.waitFor();
    expect(await errors.locator('li[data-node="2"]').getAttribute("class")).toBe("failing");
    expect(await errors.locator('li[data-node="2"]').textContent()).toContain('This server has no node class "SaveImag". Did you mean "SaveImage"?');
    expect(await errors.locator('li[data-node="3"]').textContent()).toContain('It was given "image": did you mean "images"?');
    expect(await errors.locator('li[data-node="1"]').textContent()).toContain('Input "width" is 0, below its minimum of 1.');
    expect(await errors.locator('li[data-node="4"]').getAttribute("class")).toBe("ok");
    // "Show in JSON" selects the failing node where it is written.
    await errors.locator('li[data-node="3"]').getByRole("button", { name: "Show in JSON" }).click();
    expect(await page.locator("#workflow").evaluate((t: HTMLTextAreaElement) => t.value.slice(t.selectionStart, t.selectionEnd))).toBe('"3"');
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    await errors.scrollIntoViewIfNeeded();
    await shot("node-errors", true);
  });

  it("uploads an input image for the LoadImage of the submitted graph, which then runs on it", async () => {
    await page.goto(`${server.url}/#/submit`);
    await page.locator("#example").selectOption("pipeline");
    await page.locator("#input-image").setInputFiles(join(ROOT, "examples/inputs/gradient.png"));
    await expect.poll(() => page.locator("#upload-placed").textContent()).toBe("Put into node 1 (LoadImage) as a core/ASSET reference.");
    await expect.poll(() => page.locator(".uploaded img").evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(96);
    const graph = JSON.parse(await page.locator("#workflow").inputValue());
    expect(graph["1"].inputs.image).toMatchObject({ __type: "core/ASSET", info: { id: expect.any(String) } });
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    await shot("upload", true);
    await page.getByRole("button", { name: "Submit job" }).click();
    await page.waitForURL(/#\/jobs\/[0-9a-f-]{36}$/);
    await expect.poll(() => page.locator("#job-status").textContent(), { timeout: 30_000 }).toBe("succeeded");
    const output = page.locator('#job-outputs li[data-output-type="image"] img');
    await output.waitFor({ state: "visible" });
    await expect.poll(() => output.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(256);
  });

  it.runIf(viewport.name === "phone")("no page scrolls sideways at 360 px either", async () => {
    const job = await server.api.submit(samplerGraph(5, { seconds: 0.01 }));
    await server.api.waitTerminal(job.id);
    const narrow = await browser.newPage({ viewport: { width: 360, height: 740 } });
    try {
      // A running job whose current node has a title (one long word): the row holds the id, the class, the title and the "running" badge.
      const running = await server.api.submit({
        "1": { class_type: "PrimitiveString", inputs: { value: unique("narrow") } },
        "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 60 }, _meta: { title: "finalupscalepass" } },
        "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
      });
      await narrow.goto(`${server.url}/#/jobs/${running.id}`);
      await narrow.locator(".nodes li.current .badge-running").waitFor();
      expect(await sidewaysOverflow(narrow), "a running job's page").toBeLessThanOrEqual(0);
      await narrow.screenshot({ path: join(SHOTS, "phone-360-job-running.png") });
      await server.api.post(`/api/v2/jobs/${running.id}/cancel`);
      const ready: Record<string, string> = {
        "/": "table.jobs tbody tr",
        "/#/submit": "#workflow",
        [`/#/jobs/${job.id}`]: "#graph-title",
        "/docs/events": "#jobEvents-preview",
        "/docs": "text=Submit a workflow",
      };
      for (const [path, selector] of Object.entries(ready)) {
        await narrow.goto(`${server.url}${path}`);
        await narrow.locator(selector).first().waitFor({ state: "attached" });
        expect(await sidewaysOverflow(narrow), path).toBeLessThanOrEqual(0);
        for (const selector of path.startsWith("/docs") ? [] : ['nav a[href="/metrics"]', "#token-button"]) {
          const box = await narrow.locator(selector).boundingBox();
          expect(box !== null && box.x + box.width <= 360, `${path} ${selector}`).toBe(true);
        }
      }
    } finally {
      await narrow.close();
    }
  });
});

describe.skipIf(!hasChromium)("the jobs list's filter and pages", { timeout: 120_000 }, () => {
  it("shows each job's labels and filters the list by key=value, from the box and from a label", async () => {
    await prepareUi();
    const server = await startTestServer();
    const browser = await chromium.launch(LAUNCH);
    try {
      const submit = async (metadata?: Record<string, string>) => {
        const res = await server.api.post("/api/v2/jobs", { workflow: delayGraph(0.01), ...(metadata ? { metadata } : {}) });
        expect(res.status, res.text).toBe(201);
        await server.api.waitTerminal(res.body.id);
        return res.body.id as string;
      };
      const a = await submit({ project: "cats", run: "1" });
      const b = await submit({ project: "cats", run: "2" });
      const c = await submit({ project: "dogs" });
      const d = await submit();
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(`${server.url}/`);
      const rows = page.locator("table.jobs tbody tr");
      const listed = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-job-id")));
      await expect.poll(listed).toEqual([d, c, b, a]);
      const chips = (id: string) => page.locator(`tr[data-job-id="${id}"] .label-chip`).allTextContents();
      await expect.poll(() => chips(a)).toEqual(["project=cats", "run=1"]);
      expect(await chips(d)).toEqual([]);
      await page.screenshot({ path: join(SHOTS, "20-jobs-labels.png") });

      const box = page.locator("#label-filter");
      await box.fill("project=cats");
      await box.press("Enter");
      await expect.poll(() => page.url()).toContain("label=project%3Dcats");
      await expect.poll(listed).toEqual([b, a]);
      await page.locator("#label-filter").fill("project=cats run=2");
      await page.locator("#label-filter").press("Enter");
      await expect.poll(listed).toEqual([b]);
      await page.screenshot({ path: join(SHOTS, "21-jobs-label-filter.png") });
      // What the box cannot take is said beside it, and the list stays as it was.
      await page.locator("#label-filter").fill("team name");
      await page.locator("#label-filter").press("Enter");
      await expect.poll(() => page.locator("#label-filter-error").textContent()).toMatch(/not key=value/);
      expect(await page.locator("#label-filter-error").isVisible()).toBe(true);
      expect(await listed()).toEqual([b]);
      // An empty box shows every job again; a job's label is a link to the jobs carrying it.
      await page.locator("#label-filter").fill("");
      await page.locator("#label-filter").press("Enter");
      await expect.poll(listed).toEqual([d, c, b, a]);
      await page.locator(`tr[data-job-id="${c}"] .label-chip`, { hasText: "project=dogs" }).click();
      await expect.poll(listed).toEqual([c]);
      expect(await page.locator("#label-filter").inputValue()).toBe("project=dogs");

      await page.goto(`${server.url}/#/jobs/${a}`);
      await expect.poll(() => page.locator("#job-labels .label-chip").allTextContents()).toEqual(["project=cats", "run=1"]);
      await page.goto(`${server.url}/#/jobs/${d}`);
      await expect.poll(() => page.locator("#job-status").textContent()).toBe("succeeded");
      expect(await page.locator("#job-labels").count()).toBe(0);
    } finally {
      await browser.close();
      await server.stop();
    }
  });

  it("filters by status and pages on with the cursor", async () => {
    await prepareUi();
    const server = await startTestServer();
    const browser = await chromium.launch(LAUNCH);
    try {
      // An upload name that was never uploaded passes validation and fails when the node runs.
      const failed = await server.api.submit({
        "1": { class_type: "LoadImage", inputs: { image: "never-uploaded.png" } },
        "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
      });
      expect((await server.api.waitTerminal(failed.id)).status).toBe("failed");
      const ids: string[] = [];
      for (let i = 0; i < 23; i++) ids.push((await server.api.submit(delayGraph(0.01))).id);
      for (const id of ids) await server.api.waitTerminal(id);
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(`${server.url}/`);
      const rows = page.locator("table.jobs tbody tr");
      await expect.poll(() => rows.count()).toBe(20);
      expect(await rows.first().getAttribute("data-job-id")).toBe(ids.at(-1));
      await page.locator("#page-older").click();
      await expect.poll(() => page.locator(`tr[data-job-id="${ids[0]}"]`).count()).toBe(1);
      expect(await rows.count()).toBe(24 - 20);
      expect(await page.locator("#page-older").count()).toBe(0);
      await page.locator("#page-newest").click();
      await expect.poll(() => page.locator(`tr[data-job-id="${ids.at(-1)}"]`).count()).toBe(1);
      await page.locator("#status-filter").selectOption("failed");
      await expect.poll(() => page.url()).toContain("status=failed");
      await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-job-id")))).toEqual([failed.id]);
      await page.locator("#status-filter").selectOption("succeeded");
      await expect.poll(() => rows.count()).toBe(20);
      expect(await page.locator('tr[data-status="failed"]').count()).toBe(0);
      // A job that failed at run time marks its failing node in the workflow.
      await page.goto(`${server.url}/#/jobs/${failed.id}`);
      await expect.poll(() => page.locator("#job-status").textContent()).toBe("failed");
      const node = page.locator('ol.nodes li[data-node="1"]');
      await expect.poll(() => node.getAttribute("class")).toBe("failing");
      expect(await node.textContent()).toContain("failed here");
    } finally {
      await browser.close();
      await server.stop();
    }
  });
});
