package postgres_test

// Coverage of migration 00026 (control totals), merged into schemaCoverage
// and textOrigins. The figures are computed by our code from accounts that
// passed validation (meter points: at most 100 addresses of 10 each) and
// summed into numeric columns without precision, which no sum overflows;
// the declared totals are parsed and bounded by the API before they are
// written, as JSON our code builds.
func init() {
	const figures = "computed by our code from a validated account, or summed from such figures into an unbounded numeric"
	for _, k := range []string{"import_jobs.received_transfer_balance numeric", "import_jobs.received_opening_transactions numeric",
		"import_jobs.received_meter_points bigint", "import_jobs.created_transfer_balance numeric",
		"import_jobs.created_opening_transactions numeric", "import_jobs.created_meter_points bigint",
		"import_job_records.transfer_balance numeric", "import_job_records.opening_transactions numeric",
		"import_job_records.meter_points integer"} {
		schemaCoverage[k] = notFromPartner(figures)
	}
	textOrigins["import_jobs.control_declared"] = internal
}
