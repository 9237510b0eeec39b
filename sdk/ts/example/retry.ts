// Stages one account, then uploads a gzipped bulk job of two, through
// whatever DATAIMPORT_URL points at (the SDK test puts a front there that
// answers the stage's first try 503 with Retry-After, and the upload's
// first try 401 token_expired), and prints how many retries the client
// made, how often the upload's progress started again and what the job
// created. Settings as walkthrough.ts.
import { readFileSync } from "node:fs";
import { DataImportClient } from "@dataimport/sdk";

async function main(): Promise<void> {
  let retries = 0;
  const api = new DataImportClient(process.env.DATAIMPORT_URL ?? "", process.env.DATAIMPORT_API_KEY ?? "", {
    onRetry: () => retries++,
  });
  // Other accounts than walkthrough.ts's.
  const sample = JSON.parse(readFileSync(process.env.ACCOUNT_FILE ?? "", "utf8")) as { import_supplier: string; external_account_number: string };
  const staged = await api.stageAccount({ ...sample, external_account_number: "EXT-RETRY-1" });

  const lines = ["EXT-RETRY-2", "EXT-RETRY-3"].map((n) => JSON.stringify({ ...sample, external_account_number: n }) + "\n");
  let last = 0;
  let restarts = 0;
  const job = await api.uploadJob(sample.import_supplier, "Migrations", () => lines, {
    gzip: true,
    onProgress: (sent) => {
      if (sent <= last) restarts++;
      last = sent;
    },
  });
  const done = await api.waitJob(job.id, { intervalMs: 200 });
  console.log(JSON.stringify({ ok: true, retries, staged, progress_restarts: restarts, job_created: done.counters.created }));
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack ?? e.message : e);
  process.exit(1);
});
