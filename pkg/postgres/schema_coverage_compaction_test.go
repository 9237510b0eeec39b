package postgres_test

// Coverage of migration 00031 (compaction of completed jobs), merged into
// textOrigins.
func init() {
	// Figures computed by our code from a validated staged payload: counts
	// and decimal sums under our own figure names.
	textOrigins["import_processes.staged_figures"] = internal
}
