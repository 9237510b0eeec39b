package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A job whose control totals do not match says so on the overview's bulk
// job row, naming the totals (CONTRACT §14: a mismatch is never silent).
func TestOverviewShowsControlTotalMismatch(t *testing.T) {
	st, srv := consoleStack(t)
	st.Supplier("ACME")
	ten := st.Tenant("Acme Partner", "ACME")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	// The line fails validation: nothing of it counts as received.
	line := `{"import_supplier":"ACME","external_account_number":"CT-1","sales_channel":"DIRECT","transfer_balance":"5.00"}` + "\n"
	r := st.As(ten.Token, http.MethodPost, "/v1/data-import/jobs/?import_supplier=ACME&create=false&expected_accounts=2&expected_transfer_balance_total=5.00",
		strings.NewReader(line), "Content-Type", "application/x-ndjson")
	if r.Status != http.StatusAccepted {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	b := loggedIn(t, st, srv.URL, "olivia")
	live := b.do(http.MethodGet, "/overview/live", nil)
	if live.Status != http.StatusOK || !strings.Contains(live.Body, `<strong class="error">mismatch: accounts, transfer_balance_total</strong>`) {
		t.Errorf("overview: %d %.3000s", live.Status, live.Body[strings.Index(live.Body, "bulk-jobs"):])
	}
}
