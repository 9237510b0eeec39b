package postgres_test

// Coverage of migration 00021 (failure records), merged into
// schemaCoverage. A record is written from an error our code made; the one
// partner text, the external number, is cut by pkg/storable first.
func init() {
	for _, k := range []string{"import_failures.id bigint", "import_failures.organisation_id bigint", "import_failures.supplier_id bigint",
		"import_failures.job_id bigint"} {
		schemaCoverage[k] = notFromPartner(aKey)
	}
	schemaCoverage["import_failures.line bigint"] = notFromPartner("a job's line number, counted by our code")
	schemaCoverage["import_failures.occurrences bigint"] = notFromPartner("counted by our code, one per failure seen")
	schemaCoverage["import_failures.fingerprint bigint"] = notFromPartner("a hash our code computes (import_failure_fingerprint)")
	schemaCoverage["check import_failures.import_failures_occurrences_check"] = notFromPartner("counted by our code, one per failure seen")
	schemaCoverage["check import_failures.import_failures_source_check"] = notFromPartner("a constant of our code (postgres.FailureSources)")
	schemaCoverage["check import_failures.import_failures_external_account_number_check"] = notFromPartner(
		"storable.Text cuts the number to 512 bytes before it is written (TestStorableTextColumns writes 1 MB)")
}
