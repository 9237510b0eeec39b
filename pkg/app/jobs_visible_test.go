package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestJobAccountsVisibleFromThe202 (#33): every valid line of an accepted
// job answers status 200 (v1 UNKNOWN, v2 PENDING) right after the 202, with
// no worker running yet, instead of 404 until a worker round stages it. An
// invalid line is not an account and an unknown external is unknown: 404,
// as for an organisation not granted the supplier. Once the worker runs,
// the same reads follow the accounts to COMPLETED / PROCESSED.
func TestJobAccountsVisibleFromThe202(t *testing.T) {
	p := newPipeline(t)
	p.Supplier("OTHER_ENERGY")
	stranger := p.Tenant("Stranger Partner", "OTHER_ENERGY")
	sibling := p.Tenant("Sibling Partner", "DEMO_ENERGY") // granted the supplier, not the uploader

	const n = 1000 // every line is read twice over HTTP: the rule, not the volume (results/visible.md has the 200,000-line figure)
	var body strings.Builder
	valid, invalid := []string{}, []string{}
	for i := range n {
		ext := fmt.Sprintf("VIS-%d", i)
		switch {
		case i%97 == 13:
			invalid = append(invalid, ext)
			body.WriteString(p.invalidJobLine(ext))
		case i%250 == 220: // a repeat of an earlier line: still one account
			body.WriteString(p.jobAccountLine(fmt.Sprintf("VIS-%d", i-100)))
		default:
			valid = append(valid, ext)
			body.WriteString(p.jobAccountLine(ext))
		}
		body.WriteString("\n")
	}
	before := time.Now().Add(-time.Second)
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations", strings.NewReader(body.String()), true))
	if got := p.count(`SELECT count(*) FROM import_processes`); got != 0 {
		t.Fatalf("%d processes staged with no worker running: the test would not test the miss path", got)
	}

	v1 := func(token, ext string) testutil.Response {
		return p.As(token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/"+ext+"/", nil)
	}
	v2 := func(token, ext, tail string) testutil.Response {
		return p.As(token, http.MethodGet, v2Accounts+"DEMO_ENERGY/"+ext+"/"+tail, nil)
	}
	for _, ext := range valid {
		r := v1(p.token, ext)
		st := r.JSON()
		if r.Status != http.StatusOK || st["status"] != "UNKNOWN" || st["external_account_number"] != ext ||
			st["platform_account_number"] != "" || st["account_created_at"] != nil {
			t.Fatalf("v1 status of accepted %s: %d %s", ext, r.Status, r.Body)
		}
		if at, err := time.Parse(time.RFC3339Nano, st["created_at"].(string)); err != nil || at.Before(before) || at.After(time.Now()) {
			t.Fatalf("v1 created_at of %s is not the job's received_at: %v (%v)", ext, st["created_at"], err)
		}
		r = v2(p.token, ext, "")
		st = r.JSON()
		if r.Status != http.StatusOK || st["status"] != "PENDING" || st["scheduled"] != false || st["platform_account_number"] != nil ||
			st["latest_event"] != nil || st["latest_error"] != nil {
			t.Fatalf("v2 status of accepted %s: %d %s", ext, r.Status, r.Body)
		}
	}
	for _, ext := range append(invalid, "VIS-NEVER-SENT") {
		if r := v1(p.token, ext); r.Status != http.StatusNotFound {
			t.Fatalf("v1 status of %s (not an account): %d %s", ext, r.Status, r.Body)
		}
		if r := v2(p.token, ext, ""); r.Status != http.StatusNotFound {
			t.Fatalf("v2 status of %s (not an account): %d %s", ext, r.Status, r.Body)
		}
	}
	// Tenancy as for a staged account: any organisation granted the
	// supplier sees it, one not granted it is told nothing.
	if r := v1(sibling.Token, valid[0]); r.Status != http.StatusOK || r.JSON()["status"] != "UNKNOWN" {
		t.Fatalf("granted organisation: %d %s", r.Status, r.Body)
	}
	if r := v1(stranger.Token, valid[0]); r.Status != http.StatusNotFound {
		t.Fatalf("organisation not granted the supplier: %d %s", r.Status, r.Body)
	}
	if r := v2(stranger.Token, valid[0], ""); r.Status != http.StatusNotFound {
		t.Fatalf("v2, organisation not granted the supplier: %d %s", r.Status, r.Body)
	}
	// Not staged yet: an empty timeline, and nothing to cancel but the job.
	if evs := p.eventsV2(valid[1]); len(evs) != 0 {
		t.Fatalf("timeline of an unstaged line: %v", evs)
	}
	r := p.As(p.token, http.MethodPost, v2Accounts+"DEMO_ENERGY/"+valid[1]+"/cancel/", nil)
	if e := r.JSON(); r.Status != http.StatusConflict || e["code"] != "import_process_not_cancellable" || e["status"] != "PENDING" ||
		!strings.Contains(e["detail"].(string), fmt.Sprintf("%s%d/cancel/", jobsURL, id)) {
		t.Fatalf("cancel of an unstaged line: %d %s", r.Status, r.Body)
	}

	p.StartWorker()
	if v := p.waitJob(p.token, id, 3*time.Minute); v.State != "COMPLETED" {
		t.Fatalf("job %s: %v", v.State, v.Counters)
	}
	for _, ext := range valid {
		if st := p.status(ext); st["status"] != "COMPLETED" {
			t.Fatalf("v1 status of %s after the job: %v", ext, st)
		}
		if st := p.statusV2(ext); st["status"] != "PROCESSED" {
			t.Fatalf("v2 status of %s after the job: %v", ext, st)
		}
	}
	if r := v1(p.token, invalid[0]); r.Status != http.StatusNotFound {
		t.Fatalf("invalid line after the job: %d %s", r.Status, r.Body)
	}
	testutil.Tally(testutil.RowsChecked, 2*len(valid))
}
