// The console in real headless Chromium (Debian's, driven by playwright-core; no browser
// download), against the real stack, through a real job. tests/stack/training/test_console.py
// runs it and reads its protocol on stdin/stdout:
//
//   env  GATEWAY, CONSOLE_USER, CONSOLE_PASSWORD, ROUNDS, OUT_DIR, CHROMIUM, WIDE_CSV (a
//        31-column table to upload), CONSOLE_NODE_MODULES (where `npm ci` put playwright-core)
//   out  {"ready": true}            logged in, on the jobs list
//   in   {"job_id", "dataset_id"}   the job the test just created
//   out  {"want_graph": true, "rerun_id"}   done with that job's pages (and its rerun's)
//   in   {"job_id"}                 a job whose model is a long layer graph
//   out  {"seen": [...], "download_bytes", "screenshot", ...}   last line, then exit 0
//
// It sees the job arrive on the open jobs list and change state there (no reload), watches
// the job page's accuracy curve gain points round by round, reloads (still logged in),
// downloads the final model with the page's button, reruns the job under the same name and
// cancels the rerun, reads the rerun's events, compares the two jobs (legend, axes), checks
// a new job with the form's dry run, uploads a 31-column table with the upload page and
// looks at it (the page no wider than the window), and looks at the peers and dataset
// pages; then at a long graph's architecture table (closed at first, scrolling in its box).
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
    page.on("dialog", (d) => void d.accept()); // "Cancel this job?"
    const screenshots = {};
    const shot = async (name) => {
      screenshots[name] = path.join(OUT, `console-${name}.png`);
      await page.screenshot({ path: screenshots[name], fullPage: true });
    };
    const hashId = () => page.evaluate(() => location.hash.split("/")[2] ?? "");

    await page.goto(`${GATEWAY}/?poll_ms=200`);
    await page.fill("input[name=username]", env("CONSOLE_USER"));
    await page.fill("input[name=password]", env("CONSOLE_PASSWORD"));
    await page.click("form.login button[type=submit]");
    await page.waitForSelector("#nav a[href='#/jobs']");
    say({ ready: true });

    const { job_id: jobId, dataset_id: datasetId } = await nextLine();
    // The jobs list, open since before the job existed: the job's row arrives, and its
    // state or round changes, without a reload.
    const rowText = (id) =>
      page.evaluate((id) => {
        const row = document.querySelector(`[data-testid=jobs] a[href='#/jobs/${id}']`)?.closest("tr");
        return row ? `${row.children[2].textContent} ${row.children[3].textContent}` : null;
      }, id);
    const listStates = [];
    for (const until = Date.now() + 120_000; listStates.length < 2 && Date.now() < until; await sleep(100)) {
      const text = await rowText(jobId);
      if (text !== null && listStates[listStates.length - 1] !== text) listStates.push(text);
    }
    await shot("jobs");
    // A hidden tab stops polling (the loop waits, marked on <html>), and a shown one goes on
    // with a new request at once. (Headless Chromium's tab is never hidden: say it is.)
    const setHidden = (hidden) =>
      page.evaluate((hidden) => {
        Object.defineProperty(document, "hidden", { value: hidden, configurable: true });
        document.dispatchEvent(new Event("visibilitychange"));
      }, hidden);
    await setHidden(true);
    await page.waitForSelector("html[data-polling=paused]");
    const [resumed] = await Promise.all([
      page.waitForRequest((r) => new URL(r.url()).pathname === "/api/jobs"),
      setHidden(false),
    ]);
    const hiddenPaused = Boolean(resumed) && (await page.$("html[data-polling=paused]")) === null;
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
    const axes = await page.evaluate(() =>
      Object.fromEntries(
        ["curve-accuracy", "curve-loss", "peer-loss"].map((id) => {
          const el = document.querySelector(`[data-testid=${id}]`);
          return [id, el ? { y0: Number(el.dataset.y0), y1: Number(el.dataset.y1), points: Number(el.dataset.points) } : null];
        }),
      ),
    );
    const lineageText = await page.textContent("[data-testid=lineage]");
    await shot("job");
    const screenshot = screenshots.job;

    // A reload keeps the session: the job page again, no login form.
    await page.reload();
    await page.waitForSelector("[data-testid=job-summary]");
    const reloadKept = (await page.$("form.login")) === null;

    // The model, through the page's own button (a fetch with the user's token, then a
    // blob download).
    // A download that does not come says what the page showed instead (an error, or a
    // request still pending).
    const downloadBy = async (testid) => {
      try {
        const [d] = await Promise.all([page.waitForEvent("download"), page.click(`[data-testid=${testid}]`)]);
        return d;
      } catch (e) {
        const status = await page.textContent("[data-testid=download-status]").catch(() => null);
        throw new Error(`${testid}: ${e.message}; the page's download status: ${JSON.stringify(status)}`);
      }
    };
    const download = await downloadBy("download-pt");
    const model = path.join(OUT, "model.pt");
    await download.saveAs(model);
    const head = fs.readFileSync(model).subarray(0, 2).toString("latin1");
    // The best version, by its own button: named after the version the server sent.
    const best = await downloadBy("download-best");
    const bestName = best.suggestedFilename();
    const bestModel = path.join(OUT, bestName);
    await best.saveAs(bestModel);
    const bestStatus = await page.textContent("[data-testid=download-status]");

    // Rerun under the very same name, then cancel the rerun from its page.
    await page.fill("[data-testid=rerun-name]", await page.evaluate(() => document.querySelector("h1").firstChild.textContent));
    await page.click("[data-testid=rerun]");
    await page.waitForFunction((id) => /^#\/jobs\/[^/]+$/.test(location.hash) && !location.hash.endsWith(id), jobId);
    const rerunId = await hashId();
    await page.waitForSelector("[data-testid=cancel]:not([disabled])");
    await page.click("[data-testid=cancel]");
    await page.waitForFunction(() => /cancelled/.test(document.querySelector("h1")?.textContent ?? ""), null, { timeout: 120_000 });
    const cancelDisabled = await page.evaluate(() => document.querySelector("[data-testid=cancel]").disabled);
    // Its events, from the job page's link.
    await page.click("[data-testid=events-link]");
    await page.waitForSelector("[data-testid=events] tbody tr");
    const eventTypes = await page.$$eval("[data-testid=events] tbody tr", (rows) => rows.map((r) => r.children[2].textContent));
    await shot("events");

    // The two jobs of one name on one chart.
    await page.evaluate(([a, b]) => (location.hash = `#/compare/${a},${b}`), [jobId, rerunId]);
    await page.waitForSelector("[data-testid=compare-accuracy] .legend");
    const comparePoints = Number(await page.getAttribute("[data-testid=compare-accuracy]", "data-points"));
    const legend = await page.$$eval("[data-testid=compare-accuracy] .legend span", (items) => items.map((i) => i.textContent));
    const compareAxes = await page.evaluate(() => {
      const [acc, loss] = ["compare-accuracy", "compare-loss"].map((id) => document.querySelector(`[data-testid=${id}]`).dataset);
      return { accuracy: [Number(acc.y0), Number(acc.y1)], loss: [Number(loss.y0), Number(loss.y1)] };
    });
    await shot("compare");

    // A new job, checked by the server as it is filled in (nothing created).
    await page.evaluate(() => (location.hash = "#/jobs/new"));
    await page.waitForSelector("[data-testid=job-form]");
    await page.selectOption("[data-testid=job-dataset]", datasetId);
    await page.fill("[data-testid=job-name]", "console-form");
    await page.waitForFunction(() => {
      const text = document.querySelector("[data-testid=job-check]")?.textContent ?? "";
      return text !== "" && !/as you type/.test(text);
    });
    const dryRun = await page.textContent("[data-testid=job-check]");
    await shot("new-job");

    // A 31-column table through the upload page: the bar fills, the dataset opens when
    // validated, and its preview scrolls in its own box.
    await page.click("#nav a[href='#/datasets']");
    await page.click("[data-testid=upload-link]");
    await page.setInputFiles("input[type=file]", env("WIDE_CSV"));
    await page.fill("input[name=name]", "console-wide");
    await page.click("[data-testid=upload]");
    await page.waitForSelector("[data-testid=preview]", { timeout: 120_000 });
    const wide = await page.evaluate(() => {
      const box = document.querySelector("[data-testid=preview]").parentElement;
      return {
        columns: document.querySelectorAll("[data-testid=preview] thead th").length,
        box_scrolls: box.scrollWidth > box.clientWidth,
        page_width: document.documentElement.scrollWidth,
        window_width: window.innerWidth,
      };
    });
    await shot("wide-dataset");

    await page.click("#nav a[href='#/peers']");
    await page.waitForSelector("[data-testid=peers]");
    const peerRows = await page.$$eval("[data-testid=peers] tbody tr", (rows) => rows.map((r) => r.textContent));

    await page.evaluate((id) => (location.hash = `#/datasets/${id}`), datasetId);
    await page.waitForSelector("[data-testid=preview]");
    const classRows = await page.$$eval("[data-testid=class-counts] tbody tr", (rows) => rows.length);
    const schemaRows = await page.$$eval("[data-testid=schema] tbody tr", (rows) => rows.length);

    // A long graph: its table starts closed; opened, it scrolls inside its box and the
    // page stays as wide as the window.
    say({ want_graph: true, rerun_id: rerunId });
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
    await shot("graph");

    say({
      seen,
      list_states: listStates,
      hidden_paused: hiddenPaused,
      reload_kept_session: reloadKept,
      axes,
      lineage: lineageText,
      rerun_id: rerunId,
      cancel_disabled: cancelDisabled,
      event_types: eventTypes,
      legend,
      compare_axes: compareAxes,
      dry_run: dryRun,
      wide,
      screenshots,
      architecture: arch,
      graph: { ...graph, closed_at_first: closedAtFirst },
      screenshot,
      download_bytes: fs.statSync(model).size,
      best_name: bestName,
      best_bytes: fs.statSync(bestModel).size,
      best_status: bestStatus,
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
