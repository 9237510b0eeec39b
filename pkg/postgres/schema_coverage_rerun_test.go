package postgres_test

// Coverage of migration 00023 (re-running a job's lines), merged into
// schemaCoverage and textOrigins.
func init() {
	schemaCoverage["import_job_corrections.job_id bigint"] = notFromPartner(aKey)
	schemaCoverage["import_job_corrections.line bigint"] = notFromPartner("a line number of the re-run's body, counted by our code")
	// A corrected line is a valid account (the upload's validation), its
	// number and payload as the job's lines have them.
	textOrigins["import_job_corrections.external_account_number"] = partner
	textOrigins["import_job_corrections.payload"] = partner
	// Earlier outcomes of a line: copies of its errors, which may quote a
	// vendor (TestStorableTextColumns re-runs a line with a hostile error).
	textOrigins["import_job_records.history"] = external
}
