package postgres_test

// Coverage of migration 00015 (bulk import jobs), merged into
// schemaCoverage. No column there is bounded by partner input: ids are
// keys, counters and line numbers are counted by our code, and the lines'
// text (external number, payload) is stored unbounded and validated by the
// account rules before it is ever staged.
func init() {
	const counted = "counted by our code as lines are received and processed"
	for _, k := range []string{"import_jobs.id bigint", "import_jobs.organisation_id bigint", "import_jobs.supplier_id bigint",
		"import_jobs.operations_team_id bigint", "import_job_records.job_id bigint", "import_job_records.process_id bigint"} {
		schemaCoverage[k] = notFromPartner(aKey)
	}
	for _, k := range []string{"import_jobs.body_bytes bigint", "import_jobs.n_received bigint", "import_jobs.n_pending bigint",
		"import_jobs.n_invalid bigint", "import_jobs.n_duplicate_line bigint", "import_jobs.n_staged bigint", "import_jobs.n_in_progress bigint",
		"import_jobs.n_created bigint", "import_jobs.n_already_imported bigint", "import_jobs.n_failed bigint", "import_jobs.n_cancelled bigint",
		"import_job_records.line bigint"} {
		schemaCoverage[k] = notFromPartner(counted + "")
	}
	for _, k := range []string{"import_jobs.lease_epoch integer", "import_jobs.receive_epoch integer", "import_job_records.attempt integer", "import_job_records.staged_version integer"} {
		schemaCoverage[k] = notFromPartner(ourState)
	}
}
