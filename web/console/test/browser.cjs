// The console in real headless Chromium (Debian's, driven by playwright-core; no browser
// download), against the real stack, through a real job. tests/stack/training/test_console.py
// runs it and reads its protocol on stdin/stdout:
//
//   env  GATEWAY, CONSOLE_USER, CONSOLE_PASSWORD, ROUNDS, OUT_DIR, CHROMIUM,
//        CONSOLE_NODE_MODULES (where `npm ci` put playwright-core)
//   out  {"ready": true}            logged in, on the jobs list
//   in   {"job_id", "dataset_id"}   the job the test just created
//   out  {"want_graph": true}       done with that job's pages
//   in   {"job_id"}                 a job whose model is a long layer graph
//   out  {"seen": [...], "download_bytes", "screenshot", ...}   last line, then exit 0
//
// It watches the job page's accuracy curve gain points round by round, downloads the final
// model with the page's button, and looks at the compare, peers and dataset pages; then at
// a long graph's architecture table (closed at first, scrolling in its box, the page no
// wider than the window).
"use strict";
const path = require("node:path");
const fs = require("node:fs");
const readline = require("node:readline");
const { chromium } = require(path.join(process.env.CONSOLE_NODE_MODULES, "playwright-core"));

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const GATEWAY = env("GATEWAY");
const ROUNDS = Number(env("ROUNDS"));
const OUT = env("OUT_DIR");
const say = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function nextLine() {
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    rl.close();
    return JSON.parse(line);
  }
  throw new Error("stdin closed before the job id came");
}

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  const errors = [];
  try {
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1200, height: 1000 } });
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.setDefaultTimeout(60_000);

    await page.goto(`${GATEWAY}/?poll_ms=200`);
    await page.fill("input[name=username]", env("CONSOLE_USER"));
    await page.fill("input[name=password]", env("CONSOLE_PASSWORD"));
    await page.click("form.login button[type=submit]");
    await page.waitForSelector("#nav a[href='#/jobs']");
    say({ ready: true });

    const { job_id: jobId, dataset_id: datasetId } = await nextLine();
    // The jobs list (shown afresh), then the job's own page through its link.
    await page.evaluate(() => (location.hash = "#/peers"));
    await page.evaluate(() => (location.hash = "#/jobs"));
    await page.click(`a[href='#/jobs/${jobId}']`);

    // Watch the curve: data-points is how many rounds' points it draws.
    const seen = [];
    const deadline = Date.now() + 600_000;
    let done = false;
    while (!done) {
      if (Date.now() > deadline) throw new Error(`the curve did not reach ${ROUNDS} points; seen ${JSON.stringify(seen)}`);
      const state = await page.evaluate(() => {
        const chart = document.querySelector("[data-testid=curve-accuracy]");
        const button = document.querySelector("[data-testid=download-pt]");
        return {
          points: chart ? Number(chart.getAttribute("data-points")) : null,
          title: document.querySelector("h1")?.textContent ?? "",
          ready: button ? !button.disabled : false,
        };
      });
      if (state.points !== null && seen[seen.length - 1] !== state.points) seen.push(state.points);
      if (/failed|cancelled/.test(state.title)) throw new Error(`the job ended: ${state.title}`);
      done = state.points === ROUNDS && state.ready && /completed/.test(state.title);
      if (!done) await sleep(200);
    }
    const peersText = await page.textContent("[data-testid=job-peers]");
    const configText = await page.textContent("[data-testid=config]");
    const arch = await page.evaluate(() => {
      const el = document.querySelector("[data-testid=architecture]");
      return {
        parameters: Number(el?.getAttribute("data-parameters")),
        rows: document.querySelectorAll("[data-testid=architecture-layers] tbody tr").length,
        open: document.querySelector("[data-testid=architecture-details]")?.open ?? null,
        text: document.querySelector("[data-testid=architecture-summary]")?.textContent ?? "",
      };
    });
    const screenshot = path.join(OUT, "console-job.png");
    await page.screenshot({ path: screenshot, fullPage: true });

    // The model, through the page's own button (a fetch with the user's token, then a
    // blob download).
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("[data-testid=download-pt]")]);
    const model = path.join(OUT, "model.pt");
    await download.saveAs(model);
    const head = fs.readFileSync(model).subarray(0, 2).toString("latin1");

    // Two jobs on one chart (the same job twice is enough to draw two series).
    await page.evaluate((id) => (location.hash = `#/compare/${id},${id}`), jobId);
    await page.waitForSelector("[data-testid=compare-accuracy] .legend");
    const comparePoints = Number(await page.getAttribute("[data-testid=compare-accuracy]", "data-points"));

    await page.click("#nav a[href='#/peers']");
    await page.waitForSelector("[data-testid=peers]");
    const peerRows = await page.$$eval("[data-testid=peers] tbody tr", (rows) => rows.map((r) => r.textContent));

    await page.evaluate((id) => (location.hash = `#/datasets/${id}`), datasetId);
    await page.waitForSelector("[data-testid=preview]");
    const classRows = await page.$$eval("[data-testid=class-counts] tbody tr", (rows) => rows.length);
    const schemaRows = await page.$$eval("[data-testid=schema] tbody tr", (rows) => rows.length);

    // A long graph: its table starts closed; opened, it scrolls inside its box and the
    // page stays as wide as the window.
    say({ want_graph: true });
    const { job_id: graphId } = await nextLine();
    await page.evaluate((id) => (location.hash = `#/jobs/${id}`), graphId);
    await page.waitForSelector("[data-testid=architecture-layers]", { state: "attached" });
    const closedAtFirst = await page.evaluate(() => !document.querySelector("[data-testid=architecture-details]").open);
    await page.click("[data-testid=architecture-details] summary");
    const graph = await page.evaluate(() => {
      const box = document.querySelector("[data-testid=architecture] .scroll");
      return {
        parameters: Number(document.querySelector("[data-testid=architecture]").getAttribute("data-parameters")),
        rows: document.querySelectorAll("[data-testid=architecture-layers] tbody tr").length,
        open: document.querySelector("[data-testid=architecture-details]").open,
        box_scrolls: box.scrollHeight > box.clientHeight,
        box_height: box.clientHeight,
        page_width: document.documentElement.scrollWidth,
        window_width: window.innerWidth,
      };
    });
    await page.screenshot({ path: path.join(OUT, "console-graph.png"), fullPage: true });

    say({
      seen,
      architecture: arch,
      graph: { ...graph, closed_at_first: closedAtFirst },
      screenshot,
      download_bytes: fs.statSync(model).size,
      download_head: head,
      model,
      compare_points: comparePoints,
      job_peers_text: peersText,
      config_chars: configText.length,
      peer_rows: peerRows,
      class_rows: classRows,
      schema_rows: schemaRows,
      page_errors: errors,
    });
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
