// Drives the operator console in Debian's Chromium through playwright-core
// (no bundled browser: executablePath). Run by TestConsoleInBrowser
// (pkg/console/browser_test.go), which starts the real api (with
// CONSOLE_ADDR) and worker processes and passes everything in the
// environment. Prints one "ok <check>" line per check; the first failure
// throws, and the process exits non-zero.
import { chromium } from "playwright-core";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const CONSOLE = env("CONSOLE_URL");
const API = env("API_URL");
const TOKEN = env("PARTNER_TOKEN");
const SUPPLIER = env("SUPPLIER");
const TEAM = env("TEAM");
const OPERATOR = env("OPERATOR");
const PASSWORD = env("ONE_TIME_PASSWORD");
const ACCOUNT = JSON.parse(env("ACCOUNT_JSON"));
const NEW_PASSWORD = "a much longer password";
const FAILURES_SUPPLIER = env("FAILURES_SUPPLIER");
const FAILURES_JOB = env("FAILURES_JOB");
const FAILURE_COUNTS = JSON.parse(env("FAILURE_COUNTS")); // [{code, attr, n}] of the job's bad lines

const t0 = Date.now();
const ok = (what) => console.log(`ok ${what} [${((Date.now() - t0) / 1000).toFixed(1)} s]`);
const check = (cond, what) => {
  if (!cond) throw new Error(`FAILED: ${what}`);
  ok(what);
};

// Partner API calls (fetch, Authorization: Token …).
async function partner(method, path, body, headers = {}) {
  const r = await fetch(API + path, {
    method,
    headers: { Authorization: `Token ${TOKEN}`, "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let json = null;
  try { json = await r.json(); } catch { /* empty */ }
  return { status: r.status, json };
}
const account = (ext) => ({ ...ACCOUNT, external_account_number: ext, import_supplier: SUPPLIER });
const stage = (ext) => partner("POST", "/v1/data-import/account-import-process/create-or-update/", account(ext));
const create = (ext) => partner("POST", "/v1/data-import/account-import-process/process/",
  { external_account_number: ext, import_supplier_code: SUPPLIER, operations_team_name: TEAM });

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"],
});
try {
  // --- Without a session every route goes to /login; a partner token opens nothing.
  const anon = await browser.newContext();
  const ap = await anon.newPage();
  for (const path of ["/", "/audit"]) {
    await ap.goto(CONSOLE + path);
    check(new URL(ap.url()).pathname === "/login", `without a session the browser opening ${path} lands on /login`);
  }
  for (const path of [`/suppliers/${SUPPLIER}`, `/suppliers/${SUPPLIER}/accounts?number=X`, "/overview/live", "/overview/chart.json", "/password", "/no-such-page"]) {
    const r = await fetch(CONSOLE + path, { redirect: "manual" });
    check(r.status === 303 && r.headers.get("location") === "/login", `without a session GET ${path} is sent to /login`);
  }
  for (const path of ["/limit", `/suppliers/${SUPPLIER}/status`, `/suppliers/${SUPPLIER}/accounts/skip`, "/logout", "/password"]) {
    const r = await fetch(CONSOLE + path, { method: "POST", redirect: "manual", body: new URLSearchParams({ limit: "1", status: "Paused" }) });
    check(r.status === 303 && r.headers.get("location") === "/login", `without a session POST ${path} is sent to /login`);
  }
  for (const path of ["/", "/audit"]) {
    const r = await fetch(CONSOLE + path, { redirect: "manual", headers: { Authorization: `Token ${TOKEN}` } });
    check(r.status === 303 && r.headers.get("location") === "/login", `a partner token gives no console access (${path})`);
  }
  await anon.close();

  // --- Log in with the one-time password; the console makes us choose our own.
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await ctx.newPage();
  page.on("dialog", (d) => d.accept()); // the confirmations before a change
  await page.goto(CONSOLE + "/login");
  await page.fill('input[name="name"]', OPERATOR);
  await page.fill('input[name="password"]', "not the password");
  await page.click('form[action="/login"] button');
  check((await page.textContent("#error")).includes("Wrong name or password"), "a wrong password is refused");
  await page.fill('input[name="name"]', OPERATOR);
  await page.fill('input[name="password"]', PASSWORD);
  await page.click('form[action="/login"] button');
  await page.waitForURL(CONSOLE + "/password");
  ok("the one-time password leads to choosing a password");
  await page.fill('input[name="current"]', PASSWORD);
  await page.fill('input[name="new"]', NEW_PASSWORD);
  await page.fill('input[name="again"]', NEW_PASSWORD);
  await page.click('form[action="/password"] button');
  await page.waitForURL(CONSOLE + "/");
  check((await page.textContent("#whoami")) === OPERATOR, "logged in: the overview names the operator");

  // --- The console session is no partner credential, and a POST without the CSRF token is refused.
  const cookies = await ctx.cookies(CONSOLE);
  const session = cookies.find((c) => c.name === "console_session");
  check(session && session.httpOnly && session.sameSite === "Strict", "the session cookie is HttpOnly and SameSite=Strict");
  for (const h of [{ Cookie: `console_session=${session.value}` }, { Authorization: `Token ${session.value}` }]) {
    const r = await fetch(API + `/v1/data-import/account-transfer-status/${SUPPLIER}/X/`, { headers: h });
    check(r.status === 401, `a console session gives no partner API access (${Object.keys(h)[0]})`);
  }
  const noToken = await ctx.request.post(CONSOLE + "/limit", { form: { limit: "1" }, maxRedirects: 0 });
  check(noToken.status() === 403, "a POST without the CSRF token is refused (403)");

  // --- The completed count rises while a batch is created.
  const completed = async () => Number(await page.textContent("#completed-total"));
  const before = await completed();
  const batch = Array.from({ length: 24 }, (_, i) => `BATCH-${String(i).padStart(3, "0")}`);
  const created = (async () => {
    for (let i = 0; i < batch.length; i += 4) {
      const part = batch.slice(i, i + 4);
      await Promise.all(part.map(stage));
      const res = await Promise.all(part.map(create));
      for (const r of res) if (r.status !== 201) throw new Error(`create: ${r.status} ${JSON.stringify(r.json)}`);
      await new Promise((r) => setTimeout(r, 700)); // spread over several of the page's 2 s polls
    }
  })();
  const seen = new Set([before]);
  const watch = setInterval(async () => { try { seen.add(await completed()); } catch { /* swapping */ } }, 150);
  await created;
  await page.waitForFunction((n) => Number(document.querySelector("#completed-total")?.textContent) >= n, before + batch.length, { timeout: 15000 });
  clearInterval(watch);
  seen.add(await completed());
  const steps = [...seen].sort((a, b) => a - b);
  check(steps.length >= 3 && steps[steps.length - 1] === before + batch.length,
    `the overview's completed count rose live while the batch was created (${steps.join(" → ")})`);

  // --- Pause the supplier in the page: staging is then refused.
  await page.click(`a[href="/suppliers/${SUPPLIER}"]`);
  await page.click("#status-Paused");
  await page.waitForSelector("#flash");
  check((await page.textContent("#supplier-status")) === "Paused", "the supplier page shows Paused after the confirmation");
  const paused = await stage("PAUSED-1");
  check(paused.status === 400 && paused.json?.code === "import_supplier_migration_not_ongoing",
    `staging for the paused supplier gets 400 import_supplier_migration_not_ongoing (got ${paused.status} ${paused.json?.code})`);
  await page.click("#status-Ongoing");
  await page.waitForSelector("#flash");
  check((await stage("PAUSED-1")).status === 201, "set Ongoing again in the page: staging works");

  // --- Set the cap to 1 in the page: concurrent creates get 429.
  await page.goto(CONSOLE + "/");
  await page.fill("#limit-input", "1");
  await page.click("#limit-submit");
  await page.waitForSelector("#flash");
  check((await page.textContent("#cap-limit")) === "1", "the overview shows the cap 1");
  const capped = Array.from({ length: 12 }, (_, i) => `CAP-${i}`);
  await Promise.all(capped.map(stage));
  const results = await Promise.all(capped.map(create));
  const statuses = results.map((r) => r.status);
  check(statuses.includes(429) && statuses.includes(201) && statuses.every((s) => s === 201 || s === 429) &&
    results.filter((r) => r.status === 429).every((r) => r.json?.code === "concurrency_limit_exceeded"),
    `with the cap at 1, concurrent creates get 429 (${statuses.join(",")})`);
  await page.fill("#limit-input", "");
  await page.click("#limit-submit");
  await page.waitForSelector("#flash");
  check((await page.textContent("#cap-limit")) === "off", "the cap is cleared in the page");

  // --- Find an account and see its timeline.
  await page.goto(CONSOLE + `/suppliers/${SUPPLIER}`);
  await page.fill("#account-number", "BATCH-003");
  await page.click("#account-find");
  await page.waitForSelector("#timeline");
  const events = await page.$$eval("#timeline td.event", (tds) => tds.map((td) => td.textContent));
  check(events.includes("EVENT_ACCOUNT_IMPORT_PROCESS_STAGED") && events.includes("EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED"),
    `the account's timeline shows its events (${events.join(", ")})`);
  const number = (await page.textContent("#platform-number")).trim();
  check(/^A-[0-9A-F]{8}$/.test(number), `the timeline shows the platform account number ${number}`);
  await page.goto(CONSOLE + `/suppliers/${SUPPLIER}/accounts?number=${encodeURIComponent(number)}`);
  check((await page.textContent("h1")).includes("BATCH-003"), "the same account is found by its platform number");
  await page.goto(CONSOLE + `/suppliers/${SUPPLIER}/accounts?number=PAUSED-1`);
  await page.click("#skip");
  await page.waitForSelector("#skipped");
  ok("an account is marked skipped from its page");
  const skipped = await stage("PAUSED-1");
  check(skipped.status === 400 && skipped.json?.code === "account_marked_skipped", `staging a skipped account gets 400 (${skipped.json?.code})`);

  // --- Undo the skip from the account's page: staging works again.
  await page.click("#unskip");
  await page.waitForSelector("#skip");
  check(!(await page.$("#skipped")), "the skip is undone from the account's page");
  const unskipped = await stage("PAUSED-1");
  check(unskipped.status === 200 || unskipped.status === 201, `staging the account again after the undo works (${unskipped.status})`);

  // --- The Failures view of the 10,000-line job's supplier: 2% bad lines across five field codes.
  await page.goto(CONSOLE + `/suppliers/${FAILURES_SUPPLIER}`);
  await page.click("#failures-link");
  await page.waitForSelector("#failure-summary");
  const summary = await page.$$eval("#failure-summary tbody tr[data-code]", (trs) => trs.map((tr) => ({
    code: tr.dataset.code, attr: tr.dataset.attr, n: Number(tr.querySelector(".unresolved").textContent),
  })));
  const key = (c) => `${c.code} ${c.attr} ${c.n}`;
  check(summary.length === FAILURE_COUNTS.length && FAILURE_COUNTS.every((w) => summary.some((g) => key(g) === key(w))),
    `the Failures view counts each (code, attr) exactly (${summary.map(key).join("; ")})`);
  const firstPage = await page.$$eval("#failures tbody tr[data-id]", (trs) => trs.map((tr) => tr.dataset.id));
  check(firstPage.length === 50 && (await page.$("#page-next")), "the list is paged: 50 records and a next page");
  await page.click("#page-next");
  await page.waitForSelector("#page-first");
  const secondPage = await page.$$eval("#failures tbody tr[data-id]", (trs) => trs.map((tr) => tr.dataset.id));
  check(secondPage.length === 50 && secondPage.every((id) => !firstPage.includes(id)), "the next page lists the next 50 records");

  // Filter by cause from the summary: the phone errors only.
  await page.click('#failure-summary tr[data-code="invalid_phone_number"] a.filter');
  await page.waitForSelector('#failure-summary tr.selected[data-code="invalid_phone_number"]');
  const phones = await page.$$eval("#failures tbody tr[data-id]", (trs) => trs.map((tr) => [...tr.querySelectorAll(".code")].map((c) => c.textContent).join(",")));
  const wantPhones = FAILURE_COUNTS.find((c) => c.code === "invalid_phone_number").n;
  check(phones.length === wantPhones && phones.every((c) => c === "invalid_phone_number"),
    `filtered by invalid_phone_number the list shows its ${phones.length} records and no other`);

  // Filter with the form: code invalid_mpan, source job_line, this job.
  await page.fill("#filter-code", "invalid_mpan");
  await page.fill("#filter-attr", "");
  await page.fill("#filter-job", FAILURES_JOB);
  await page.selectOption("#filter-source", "job_line");
  await page.selectOption("#filter-resolved", "false");
  await Promise.all([page.waitForNavigation(), page.click("#filter-apply")]);
  const mpans = await page.$$eval("#failures tbody tr[data-id]", (trs) => trs.map((tr) => ({
    codes: [...tr.querySelectorAll(".code")].map((c) => c.textContent).join(","), source: tr.querySelector(".source").textContent,
    job: tr.querySelector(".job").textContent,
  })));
  const wantMpans = FAILURE_COUNTS.find((c) => c.code === "invalid_mpan").n;
  check(mpans.length === wantMpans && mpans.every((r) => r.codes === "invalid_mpan" && r.source === "job_line" && r.job.startsWith(`${FAILURES_JOB}, `)),
    `the filter form (code, job, source, resolved) lists the ${mpans.length} bad-MPAN lines of job ${FAILURES_JOB}`);
  await page.screenshot({ path: env("FAILURES_SCREENSHOT"), fullPage: true });

  // Drill down to one line: the payload as sent, the error at the MPAN.
  await page.click("#failures tbody tr[data-id] a.details");
  await page.waitForSelector("#payload");
  const marked = await page.$$eval("#payload .has-error", (spans) => spans.map((s) => ({
    path: s.dataset.path, text: s.textContent, code: s.querySelector(".annot")?.dataset.code,
  })));
  check(marked.length === 1 && marked[0].path === "supply_addresses.0.meter_points.0.mpxn" && marked[0].code === "invalid_mpan" &&
    marked[0].text.includes('"mpxn": "1200023305968"'),
    `the drill-down shows the line as sent with invalid_mpan at its MPAN (${JSON.stringify(marked)})`);
  check((await page.textContent("#failure-job")).includes(`job ${FAILURES_JOB}, line`), "the drill-down names the job and line");
  const ext = (await page.textContent("#failure-account")).trim();
  await page.click("#failure-account");
  await page.waitForURL((u) => u.pathname === `/suppliers/${FAILURES_SUPPLIER}/accounts` && u.searchParams.get("number") === ext);
  ok(`the drill-down leads to the account's page (${ext}, never staged: its line was invalid)`);

  // Retry the failed creations of a filter: none here (the lines were refused, not failed to create).
  await page.goto(CONSOLE + `/suppliers/${FAILURES_SUPPLIER}/failures?code=invalid_mpan&job=${FAILURES_JOB}`);
  await page.click("#retry-failures");
  await page.waitForSelector("#flash");
  check((await page.textContent("#flash")).includes("0 failed creations re-run"),
    "the Failures view's retry, confirmed, reports the creations it re-runs (none: refused lines are not creations)");

  // --- The actions appear in the audit log.
  await page.click('a[href="/audit"]');
  const rows = await page.$$eval("#audit tbody tr", (trs) => trs.map((tr) => ({
    actor: tr.querySelector(".actor")?.textContent, action: tr.querySelector(".action")?.textContent, target: tr.querySelector(".target")?.textContent,
  })));
  const mine = rows.filter((r) => r.actor === `operator:${OPERATOR}`);
  const has = (action, target) => mine.some((r) => r.action === action && r.target === target);
  check(has("supplier.set_status", `supplier:${SUPPLIER}`) && has("limit.set", "concurrency_limit") &&
    has("account.skip", `account:${SUPPLIER}/PAUSED-1`) && has("account.unskip", `account:${SUPPLIER}/PAUSED-1`) &&
    has("operator.change_password", `operator:${OPERATOR}`) &&
    has("operator.login", `operator:${OPERATOR}`) && mine.filter((r) => r.action === "supplier.set_status").length === 2 &&
    mine.filter((r) => r.action === "limit.set").length === 2,
    `the audit log shows the operator's actions (${mine.map((r) => r.action).join(", ")})`);

  // --- Screenshot of the overview for the README, once the chart has drawn.
  await page.goto(CONSOLE + "/");
  await page.waitForSelector('#per-minute[data-loaded="true"]');
  await page.screenshot({ path: env("SCREENSHOT"), fullPage: true });
  ok("overview screenshot saved");
} finally {
  await browser.close();
}
