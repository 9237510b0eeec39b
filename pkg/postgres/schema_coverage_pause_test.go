package postgres_test

// Coverage of migration 00025 (the error-rate brake), merged into
// schemaCoverage: an operator sets the brake (importctl supplier brake, the
// console), which check the limits first (dataimport.Brake.Validate).
func init() {
	brake := operators + " (dataimport.ParseFailureRate and Brake.Validate check it first)"
	schemaCoverage["import_suppliers.brake_failure_bp integer"] = notFromPartner(brake)
	schemaCoverage["import_suppliers.brake_window integer"] = notFromPartner(brake)
	schemaCoverage["check import_suppliers.import_suppliers_brake_check"] = notFromPartner(brake + "; both set or neither, by SetSupplierBrake")
	schemaCoverage["check import_suppliers.import_suppliers_brake_failure_bp_check"] = notFromPartner(brake)
	schemaCoverage["check import_suppliers.import_suppliers_brake_window_check"] = notFromPartner(brake)
}
