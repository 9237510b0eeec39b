package postgres_test

// Coverage of migration 00032 (kept landed digests), merged into
// schemaCoverage and textOrigins: a version counter our triggers bump and a
// digest our code computes from the platform tables.
func init() {
	schemaCoverage["accounts.landed_version bigint"] = notFromPartner("counts changes to the account's rows; bumped by our triggers only")
	schemaCoverage["landed_digests.account_id bigint"] = notFromPartner(aKey)
	schemaCoverage["landed_digests.version bigint"] = notFromPartner("the account's landed_version read with the digest")
	schemaCoverage["check landed_digests.landed_digests_digest_check"] = notFromPartner("a SHA-256 our code computes from the platform tables")
	textOrigins["landed_digests.digest"] = internal
}
