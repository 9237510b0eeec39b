package postgres_test

// Coverage of migration 00028 (per-supplier and per-organisation caps),
// merged into schemaCoverage: operators set caps, our code records the
// organisation an attempt runs for.
func init() {
	for _, k := range []string{"concurrency_caps.supplier_id bigint", "concurrency_caps.organisation_id bigint"} {
		schemaCoverage[k] = notFromPartner(aKey)
	}
	schemaCoverage["concurrency_caps.cap integer"] = notFromPartner(operators)
	schemaCoverage["check concurrency_caps.concurrency_caps_cap_positive"] = notFromPartner(operators + " (importctl and the console refuse a cap below 1)")
	schemaCoverage["check concurrency_caps.concurrency_caps_one_subject"] = notFromPartner("our code names exactly one of supplier and organisation (postgres.SetConcurrencyCap)")
	schemaCoverage["import_processes.attempt_organisation_id bigint"] = notFromPartner("the authenticated organisation's id, written by our code")
}
