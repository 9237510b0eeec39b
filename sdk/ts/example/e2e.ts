// The TypeScript SDK's example, run end to end against a real stack by
// sdk/sdk_test.go: validate → stage → create → status → notes.
// Settings: DATAIMPORT_URL, DATAIMPORT_API_KEY, ACCOUNT_FILE (an account JSON).
import { readFileSync } from "node:fs";
import { APIError, DataImportClient } from "../src/client";

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

function check(ok: boolean, what: string, got: unknown): void {
  if (!ok) throw new Error(`${what}: got ${JSON.stringify(got)}`);
}

async function main(): Promise<void> {
  const api = new DataImportClient(need("DATAIMPORT_URL"), need("DATAIMPORT_API_KEY"));
  const account = JSON.parse(readFileSync(need("ACCOUNT_FILE"), "utf8")) as { import_supplier: string; external_account_number: string };
  const supplier = account.import_supplier;
  const external = account.external_account_number;

  const validated = await api.validateAccount(account);
  check(validated.external_account_number === external, "validate", validated);
  const staged = await api.stageAccount(account);
  check(staged.import_supplier === supplier, "stage", staged);
  const created = await api.createAccount({ import_supplier_code: supplier, external_account_number: external, operations_team_name: "Migrations" });
  const status = await api.waitCreated(supplier, external);
  check(status.status === "COMPLETED" && /^A-[0-9A-F]{8}$/.test(status.platform_account_number), "status", status);
  check(created.inProgress || created.platformAccountNumber === status.platform_account_number, "create", created);
  const notes = await api.createNotes({
    import_supplier: supplier,
    external_account_number: external,
    notes: [{ body: "Migrated with the TypeScript SDK.", created_at: "2025-06-01T10:30:00+01:00" }],
  });
  check(notes.length === 1 && notes[0].status === "NOTE_CREATION_SUCCESS" && notes[0].created_at === "2025-06-01T09:30:00Z", "notes", notes);

  let typed: unknown;
  try {
    await api.status(supplier, "NO-SUCH-ACCOUNT");
  } catch (e) {
    typed = e;
  }
  check(typed instanceof APIError && typed.status === 404 && typed.code === "not_found" && typed.requestId !== "", "typed error", typed);

  console.log(JSON.stringify({ ok: true, platform_account_number: status.platform_account_number, notes: notes.length }));
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack ?? e.message : e);
  process.exit(1);
});
