package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// respondAsync makes every create answer 202 at once, so that each account
// has to be followed after its create.
func (e *env) respondAsync() {
	e.proxy.fake = func(_ http.ResponseWriter, r *http.Request, _ []byte) bool {
		if strings.HasSuffix(r.URL.Path, "/account-import-process/process/") {
			r.Header.Set("Prefer", "respond-async")
		}
		return false
	}
}

func (e *env) statusCalls(external string) int {
	return e.proxy.calls("/account-transfer-status/DEMO_ENERGY/"+external+"/", "")
}

// With --follow events the accounts answered 202 are followed through the
// event feed: each status URL is read once (the resume check before any
// work), none is polled, and the outcomes are those of the events: created,
// failed in the worker, dry run succeeded.
func TestPushFollowEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.respondAsync()
	// One account the database refuses in the worker: an error event.
	const refused = "FOL-0007"
	if err := e.st.DB.Gorm().Exec(`ALTER TABLE accounts ADD CONSTRAINT test_refuse_one CHECK (external_account_number <> '` + refused + `') NOT VALID`).Error; err != nil {
		t.Fatal(err)
	}
	const n = 40
	file := e.writeFile("accounts.ndjson", validLines(t, "FOL", n))
	report := filepath.Join(e.dir, "report.csv")
	out, err := e.push(file, report, "--parallel", "8", "--follow", "events")
	if err == nil || !strings.Contains(err.Error(), errSomeFailed.Error()) {
		t.Fatalf("push: %v, want one failure\n%s", err, out)
	}
	if got := e.proxy.status(http.StatusAccepted); got != n {
		t.Fatalf("%d creates answered 202, want %d: the test follows nothing", got, n)
	}
	rows := byAccount(readReport(t, report))
	if len(rows) != n {
		t.Fatalf("%d accounts in the report, want %d", len(rows), n)
	}
	for i := range n {
		ext := fmt.Sprintf("FOL-%04d", i)
		r := rows[ext]
		if ext == refused {
			if len(r) != 1 || r[0].Outcome != outcomeFailed || r[0].Code != "data_refused" || r[0].Detail == "" {
				t.Errorf("%s: %+v", ext, r)
			}
			continue
		}
		var number string
		if err := e.st.DB.Gorm().Raw(`SELECT platform_account_number FROM accounts WHERE external_account_number = ?`, ext).Scan(&number).Error; err != nil {
			t.Fatal(err)
		}
		if len(r) != 1 || r[0].Outcome != outcomeCompleted || r[0].Platform != number || !platformRe.MatchString(number) {
			t.Errorf("%s: %+v (account %q)", ext, r, number)
		}
		if c := e.statusCalls(ext); c != 1 {
			t.Errorf("%s: status read %d times, want once (the resume check)", ext, c)
		}
	}
	if c := e.proxy.calls("/v1/data-import/events/", ""); c < 2 {
		t.Errorf("%d feed reads", c)
	}
	e.checkAllImported(n - 1)

	// A dry run followed by events says how it ended, which status polling cannot.
	dry := e.writeFile("dry.ndjson", validLines(t, "DRY", 5))
	report = filepath.Join(e.dir, "dry.csv")
	if out, err := e.push(dry, report, "--dry-run", "--follow", "events"); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, r := range readReport(t, report) {
		if r.Outcome != outcomeDryRunOK {
			t.Errorf("dry run row %+v", r)
		}
	}

	// A feed that breaks mid-run: the accounts waiting on it fall back to
	// polling their status, and the run still finishes.
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		switch {
		case strings.HasSuffix(r.URL.Path, "/account-import-process/process/"):
			r.Header.Set("Prefer", "respond-async")
		case strings.HasSuffix(r.URL.Path, "/events/") && r.URL.Query().Has("wait"):
			w.WriteHeader(http.StatusGone)
			return true
		}
		return false
	}
	broken := e.writeFile("broken.ndjson", validLines(t, "BRK", 5))
	report = filepath.Join(e.dir, "broken.csv")
	if out, err := e.push(broken, report, "--follow", "events"); err != nil {
		t.Fatalf("push with a broken feed: %v\n%s", err, out)
	}
	for _, r := range readReport(t, report) {
		if r.Outcome != outcomeCompleted {
			t.Errorf("row with a broken feed %+v", r)
		}
	}
	if c := e.statusCalls("BRK-0000"); c < 2 {
		t.Errorf("with a broken feed the status was read %d times: nothing polled it", c)
	}

	if _, err := e.push(dry, report, "--follow", "sometimes"); err == nil || !strings.Contains(err.Error(), "--follow") {
		t.Errorf("bad --follow: %v", err)
	}
}
