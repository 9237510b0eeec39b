// The README's walk-through with the TypeScript SDK, typed calls only:
// validate → stage → create → status; v2 create → status → timeline, and a
// scheduled account cancelled; a bulk job uploaded with progress, followed
// to COMPLETED and its results read; the event feed followed; a webhook
// delivery verified. make test installs the packed SDK (npm pack) into a
// project of its own, compiles this there and runs it against a private
// stack.
// Settings: DATAIMPORT_URL, DATAIMPORT_API_KEY, ACCOUNT_FILE (an account
// JSON), PREFIX (of the external account numbers it makes; default WALK),
// TEAM (default Migrations); WEBHOOK_SECRET and WEBHOOK_FILE (a delivery as
// {"headers": {...}, "body": "..."}) to verify a webhook.
import { readFileSync } from "node:fs";
import { APIError, DataImportClient, type JobState, verifyWebhook, WebhookVerificationError } from "@dataimport/sdk";

function need(name: string, def?: string): string {
  const v = process.env[name] || def;
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

function check(ok: boolean, what: string, got: unknown): void {
  if (!ok) throw new Error(`${what}: got ${JSON.stringify(got)}`);
}

async function main(): Promise<void> {
  const api = new DataImportClient(need("DATAIMPORT_URL"), need("DATAIMPORT_API_KEY"));
  const sample = JSON.parse(readFileSync(need("ACCOUNT_FILE"), "utf8")) as { import_supplier: string; external_account_number: string };
  const account = (external: string) => ({ ...sample, external_account_number: external });
  const prefix = need("PREFIX", "WALK");
  const team = need("TEAM", "Migrations");
  const supplier = sample.import_supplier;
  const out: Record<string, unknown> = {};

  // 1–5. v1: validate, stage, create, status.
  const validated = await api.validateAccount(account(`${prefix}-0001`));
  check(validated.external_account_number === `${prefix}-0001`, "validate", validated);
  await api.stageAccount(account(`${prefix}-0001`));
  await api.createAccount({ import_supplier_code: supplier, external_account_number: `${prefix}-0001`, operations_team_name: team });
  const st = await api.waitCreated(supplier, `${prefix}-0001`);
  check(st.status === "COMPLETED", "v1 status", st);
  out.v1 = st.platform_account_number;

  // 8–10. v2: create with the window open now, follow, timeline.
  const now = Date.now();
  const accepted = await api.v2Create(account(`${prefix}-0002`), { start: new Date(now), end: new Date(now + 3600_000) });
  check(accepted.status === "PENDING", "v2 create", accepted);
  const v2 = await api.v2Wait(supplier, `${prefix}-0002`, 200);
  check(v2.status === "PROCESSED" && typeof v2.platform_account_number === "string", "v2 status", v2);
  const timeline = await api.v2Events(supplier, `${prefix}-0002`);
  check(timeline.length >= 2, "v2 timeline", timeline);
  out.v2 = v2.platform_account_number;

  // 11. Another, scheduled for tomorrow, cancelled while PENDING.
  await api.v2Create(account(`${prefix}-0004`), { start: new Date(now + 86400_000), end: new Date(now + 2 * 86400_000) });
  const cancelled = await api.v2Cancel(supplier, `${prefix}-0004`);
  check(cancelled.status === "CANCELLED", "v2 cancel", cancelled);
  out.cancelled = cancelled.status;

  // 12–14. A bulk job: three accounts and a bad line, gzipped on the fly,
  // with progress; followed to COMPLETED; its results.
  const lines = ["-B001", "-B002", "-B003"].map((n) => JSON.stringify(account(prefix + n)));
  lines.push(JSON.stringify({ import_supplier: supplier, external_account_number: `${prefix}-BAD` }));
  const ndjson = lines.join("\n") + "\n";
  let progressCalls = 0;
  let sent = 0;
  const job = await api.uploadJob(supplier, team, () => lines.map((l) => l + "\n"), {
    gzip: true,
    size: Buffer.byteLength(ndjson),
    onProgress: (n) => {
      progressCalls++;
      sent = n;
    },
  });
  check(sent === Buffer.byteLength(ndjson) && progressCalls > 0, "upload progress", { sent, progressCalls });
  const states: JobState[] = [];
  const done = await api.waitJob(job.id, {
    intervalMs: 200,
    onUpdate: (j) => {
      if (states[states.length - 1] !== j.state) states.push(j.state);
    },
  });
  check(done.state === "COMPLETED" && done.counters.created === 3 && done.counters.invalid === 1, "job", done);
  const outcomes: Record<string, number> = {};
  for await (const r of api.jobResults(job.id)) {
    outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
    if (r.outcome === "invalid") check((r.errors ?? []).length > 0 && r.errors![0].attr !== "", "invalid line's errors", r);
  }
  check(outcomes.created === 3 && outcomes.invalid === 1, "results", outcomes);
  out.job = { id: job.id, states, counters: done.counters, progress_calls: progressCalls };

  // 7. The event feed from its start: one complete-v1 per account created
  // (v1, v2 and the job's three), bounded by a deadline.
  const complete = new Set<string>();
  const stop = AbortSignal.timeout(30_000);
  for await (const e of api.events("", { wait: "2s", importSupplier: supplier, signal: stop })) {
    if (e.type === "import_process.complete-v1" && "external_account_number" in e.data) complete.add(e.data.external_account_number);
    if (complete.size === 5) break;
  }
  check(complete.size === 5, "complete events", [...complete]);
  out.complete_events = complete.size;

  // Webhooks: a delivery verified with its endpoint's secret; the same
  // body altered is refused.
  if (process.env.WEBHOOK_FILE) {
    const d = JSON.parse(readFileSync(process.env.WEBHOOK_FILE, "utf8")) as { headers: Record<string, string>; body: string };
    const secret = need("WEBHOOK_SECRET");
    const event = verifyWebhook(secret, d.headers, d.body) as { id: string };
    check(event.id === d.headers["webhook-id"], "webhook event", event);
    let refused: unknown;
    try {
      verifyWebhook(secret, d.headers, d.body + " ");
    } catch (e) {
      refused = e;
    }
    check(refused instanceof WebhookVerificationError, "tampered webhook", refused);
    out.webhook_verified = true;
  }

  // Errors are typed.
  let typed: unknown;
  try {
    await api.status(supplier, "NO-SUCH-ACCOUNT");
  } catch (e) {
    typed = e;
  }
  check(typed instanceof APIError && typed.status === 404 && typed.code === "not_found" && typed.requestId !== "", "typed error", typed);

  out.ok = true;
  console.log(JSON.stringify(out));
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack ?? e.message : e);
  process.exit(1);
});
