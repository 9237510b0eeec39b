package postgres_test

// Coverage of migration 00027 (live replicas), merged into schemaCoverage
// and textOrigins: every value is the process's own (its id, host, build,
// settings and counters), none comes from a partner.
func init() {
	own := notFromPartner("written by the process about itself (pkg/app replica heartbeat)")
	for _, k := range []string{"replicas.pid integer", "replicas.busy integer",
		"check replicas.replicas_instance_check", "check replicas.replicas_role_check", "check replicas.replicas_host_check",
		"check replicas.replicas_version_check", "check replicas.replicas_fingerprint_check", "check replicas.replicas_busy_check",
		"check replicas.replicas_reason_check"} {
		schemaCoverage[k] = own
	}
	for _, c := range []string{"instance", "role", "host", "version", "fingerprint", "settings", "reason"} {
		textOrigins["replicas."+c] = internal
	}
}
