package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestJobStagedVersionReplaced: a job stages its lines and waits for its
// window; meanwhile a v1 re-stage replaces one line's staged payload. That
// line must not be created from the other payload and reported created:
// it fails with staged_version_replaced, the account stays as v1 left it,
// and the other lines are created.
func TestJobStagedVersionReplaced(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	opens := time.Now().Add(4 * time.Second).Truncate(time.Second)
	id := acceptedJob(t, p.postJob(p.token, jobQuery+"&schedule_window_start="+opens.UTC().Format(time.RFC3339), strings.NewReader(p.jobBody(0, 3)), false))
	p.waitCounter(p.token, id, "staged", 3, 30*time.Second)
	if time.Now().After(opens) {
		t.Skip("the window opened before the re-stage: the machine is too slow for this timing")
	}
	replaced := strings.Replace(p.account("EXT-0001"), "Customer asked to be contacted by e-mail only.", "Replaced by a v1 re-stage.", 1)
	if r := p.As(p.token, http.MethodPost, stagePath, replaced); r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("v1 re-stage: %d %s", r.Status, r.Body)
	}
	v := p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 3, "created": 2, "failed": 1})
	f := p.jobResults(p.token, id, "failed")
	if len(f) != 1 || f[0].ExternalAccountNumber != "EXT-0001" || f[0].Code != "staged_version_replaced" {
		t.Fatalf("failed lines: %+v", f)
	}
	if n := p.count(`SELECT count(*) FROM accounts WHERE external_account_number = ?`, "EXT-0001"); n != 0 {
		t.Fatalf("the job created EXT-0001 from the v1 payload (%d accounts)", n)
	}
}
