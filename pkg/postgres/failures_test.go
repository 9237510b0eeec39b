package postgres_test

import (
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

func (e *env) failures(supplierID int64) []postgres.Failure {
	e.tb.Helper()
	var out []postgres.Failure
	e.must(e.db.EachFailure(e.ctx, postgres.FailureQuery{SupplierID: supplierID, Limit: 1000}, func(f postgres.Failure) error {
		out = append(out, f)
		return nil
	}))
	return out
}

// A failed creation attempt is one create record however often it fails
// the same way (the detail may differ: a vendor's request id), a dry run's
// failure is none, and the account's creation resolves it in the creation
// transaction. A stage refusal is resolved by the account's next stage.
func TestFailureRecordsOfCreationAndStage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("FAILREC", false)
	refusal := func(detail string) *dataimport.Error {
		return &dataimport.Error{Code: "payment_instruction_rejected_by_vendor", Detail: detail, Domain: "vendor"}
	}
	in := e.prepare(s, "EXT-F1", false, nil)
	e.must(e.db.FinishAttempt(e.ctx, in.ProcessID, in.Attempt, postgres.OutcomeFailed, refusal("declined, request 1")))
	again := e.start(in.ProcessID, false)
	e.must(e.db.FinishAttempt(e.ctx, in.ProcessID, again, postgres.OutcomeFailed, refusal("declined, request 2")))
	dry := e.start(in.ProcessID, true)
	e.must(e.db.FinishAttempt(e.ctx, in.ProcessID, dry, postgres.OutcomeFailed, refusal("dry run")))
	fs := e.failures(s.ID)
	if len(fs) != 1 || fs[0].Source != postgres.FailureCreate || fs[0].Occurrences != 2 || fs[0].ResolvedAt != nil ||
		fs[0].Code != "payment_instruction_rejected_by_vendor" || fs[0].Detail != "declined, request 2" || len(fs[0].Errors) != 0 {
		t.Fatalf("after two failed attempts and a dry run: %+v", fs)
	}
	// A stage refusal of another account; its next stage resolves it, and
	// leaves the creation failure of EXT-F1 alone.
	bad := &dataimport.Error{Code: dataimport.CodeAccountFailedValidation, Detail: "Account failed validation.",
		Errors: []dataimport.FieldError{{Code: "invalid_mpan", Attr: "supply_addresses.0.meter_points.0.mpxn", Detail: "Enter a valid MPAN."}}}
	e.must(e.db.RecordStageRefusal(e.ctx, 0, s.ID, "EXT-F2", bad))
	e.stage(s, "EXT-F2", nil)
	e.stage(s, "EXT-F1", nil)
	for _, f := range e.failures(s.ID) {
		if (f.Source == postgres.FailureStage) != (f.ResolvedAt != nil) {
			t.Errorf("after the stages: %+v", f)
		}
	}
	// The creation resolves the creation failure.
	e.create(e.input(in.ProcessID, e.start(in.ProcessID, false), false))
	for _, f := range e.failures(s.ID) {
		if f.ResolvedAt == nil {
			t.Errorf("after the creation: %+v", f)
		}
	}
	// The same failure again is unresolved again (and counted).
	e.must(e.db.RecordStageRefusal(e.ctx, 0, s.ID, "EXT-F2", bad))
	for _, f := range e.failures(s.ID) {
		if f.ExternalAccountNumber == "EXT-F2" && (f.ResolvedAt != nil || f.Occurrences != 2) {
			t.Errorf("a resolved failure seen again: %+v", f)
		}
	}
}
