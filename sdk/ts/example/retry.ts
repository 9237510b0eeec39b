// Stages one account through whatever DATAIMPORT_URL points at (the SDK
// test puts a front there that answers the first try 503 with Retry-After)
// and prints how many retries the client made. Settings as walkthrough.ts.
import { readFileSync } from "node:fs";
import { DataImportClient } from "@dataimport/sdk";

async function main(): Promise<void> {
  let retries = 0;
  const api = new DataImportClient(process.env.DATAIMPORT_URL ?? "", process.env.DATAIMPORT_API_KEY ?? "", {
    onRetry: () => retries++,
  });
  // Another account than walkthrough.ts's.
  const account = JSON.parse(readFileSync(process.env.ACCOUNT_FILE ?? "", "utf8")) as { external_account_number: string };
  account.external_account_number = "EXT-RETRY-1";
  const staged = await api.stageAccount(account);
  console.log(JSON.stringify({ ok: true, retries, staged }));
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack ?? e.message : e);
  process.exit(1);
});
