package postgres_test

// Coverage of migration 00033 (foreign keys checked per statement), merged
// into schemaCoverage and textOrigins: the record of each key the migration
// replaced, written by the migration from the catalogue.
func init() {
	const fromCatalogue = "written by migration 00033 from the schema's own catalogue"
	for _, c := range []string{"dataimport_statement_fks_check", "dataimport_statement_fks_child_cols_check", "dataimport_statement_fks_on_delete_check"} {
		schemaCoverage["check dataimport_statement_fks."+c] = notFromPartner(fromCatalogue)
	}
	for _, c := range []string{"name", "child", "parent", "on_delete", "definition"} {
		textOrigins["dataimport_statement_fks."+c] = internal
	}
}
