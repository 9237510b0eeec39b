package dataimport_test

import (
	"slices"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// jobStateConsts is every JobState the package declares, so a state added
// there without a row below fails this test.
func jobStateConsts(t *testing.T) []dataimport.JobState {
	t.Helper()
	var out []dataimport.JobState
	for _, s := range testutil.DeclaredConsts(t, ".", "JobState") {
		out = append(out, dataimport.JobState(s))
	}
	return out
}

// TestDecideJobRetryEveryState: the answer to an upload retried with the
// same Idempotency-Key, for every job state (and every variant of a state
// the answer depends on) × same/other body × same/other options. A job cut
// mid-body is resumed, never refused as "another body".
func TestDecideJobRetryEveryState(t *testing.T) {
	const (
		replay   = dataimport.RetryReplay
		other    = dataimport.RetryOtherBody
		request  = dataimport.RetryOtherRequest
		takeOver = dataimport.RetryTakeOver
		inUse    = dataimport.RetryInUse
		failure  = dataimport.RetryReplayFailure
	)
	type want struct{ same, otherBody dataimport.RetryDecision }
	rows := []struct {
		name string
		job  dataimport.KeyedJob
		want want // with the same options; other options are always 422
	}{
		{"receiving, upload alive", dataimport.KeyedJob{State: dataimport.JobReceiving}, want{inUse, inUse}},
		{"receiving, upload stopped", dataimport.KeyedJob{State: dataimport.JobReceiving, Stale: true}, want{takeOver, takeOver}},
		{"processing", dataimport.KeyedJob{State: dataimport.JobProcessing, HasDigest: true}, want{replay, other}},
		{"completed", dataimport.KeyedJob{State: dataimport.JobCompleted, HasDigest: true}, want{replay, other}},
		{"failed, upload lost", dataimport.KeyedJob{State: dataimport.JobFailed, ErrorCode: dataimport.CodeUploadLost}, want{takeOver, takeOver}},
		{"failed, not stored", dataimport.KeyedJob{State: dataimport.JobFailed, ErrorCode: dataimport.CodeServerError}, want{takeOver, takeOver}},
		{"failed, body too large", dataimport.KeyedJob{State: dataimport.JobFailed, ErrorCode: dataimport.CodeRequestTooLarge}, want{failure, failure}},
		{"failed, body not gzip", dataimport.KeyedJob{State: dataimport.JobFailed, ErrorCode: dataimport.CodeParseError}, want{failure, failure}},
		{"cancelled after receiving", dataimport.KeyedJob{State: dataimport.JobCancelled, HasDigest: true}, want{replay, other}},
		{"cancelled while receiving", dataimport.KeyedJob{State: dataimport.JobCancelled}, want{replay, replay}},
	}
	covered := map[dataimport.JobState]bool{}
	for _, r := range rows {
		covered[r.job.State] = true
		for _, sameOptions := range []bool{true, false} {
			for _, body := range []dataimport.BodyMatch{dataimport.BodySame, dataimport.BodyOther} {
				w := r.want.same
				if body == dataimport.BodyOther {
					w = r.want.otherBody
				}
				if !sameOptions {
					w = request
				}
				// Asked first without the body, as the handler does: the
				// body is read only when the answer depends on it.
				got := dataimport.DecideJobRetry(r.job, sameOptions, dataimport.BodyUnread)
				readBody := r.want.same != r.want.otherBody
				if got == dataimport.RetryReadBody {
					if !sameOptions || !readBody {
						t.Errorf("%s (same options %v): asked for the body, the answer does not depend on it", r.name, sameOptions)
					}
					got = dataimport.DecideJobRetry(r.job, sameOptions, body)
				} else if sameOptions && readBody {
					t.Errorf("%s: answered %s without reading the body, whose match changes the answer", r.name, got)
				}
				if got != w {
					t.Errorf("%s, same options %v, body %d: %s, want %s", r.name, sameOptions, body, got, w)
				}
			}
		}
	}
	consts := jobStateConsts(t)
	for _, s := range consts {
		if !covered[s] {
			t.Errorf("job state %s has no row in the retry table", s)
		}
		if !slices.Contains(dataimport.JobStates, s) {
			t.Errorf("job state %s is missing from dataimport.JobStates", s)
		}
	}
	if len(consts) != len(dataimport.JobStates) {
		t.Errorf("JobStates has %d states, jobs.go declares %d", len(dataimport.JobStates), len(consts))
	}
	// A state DecideJobRetry does not know is refused, never replayed or taken over.
	if got := dataimport.DecideJobRetry(dataimport.KeyedJob{State: "NEW_STATE"}, true, dataimport.BodySame); got != request {
		t.Errorf("unknown state: %s", got)
	}
}
