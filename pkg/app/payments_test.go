package app_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const paymentPath = "/v1/data-import/payment-instruction/create/"

// payStack is the whole service with STRIPE configured at stripe-mock,
// behind a fault-injecting proxy, and a worker to import accounts.
type payStack struct {
	*pipeline
	proxy *testutil.FaultProxy
}

func newPayStack(t *testing.T, opts ...testutil.StackOption) *payStack {
	t.Helper()
	mock := testutil.NewStripeMock(t)
	proxy := testutil.NewFaultProxy(t, mock.URL)
	p := newPipeline(t, append([]testutil.StackOption{testutil.WithStripe(proxy.URL)}, opts...)...)
	p.StartWorker()
	return &payStack{pipeline: p, proxy: proxy}
}

// imported stages and creates an account; it returns its platform number.
func (s *payStack) imported(external string) string {
	s.TB.Helper()
	s.stage(external)
	r := s.create(external, nil)
	if r.Status != http.StatusCreated {
		s.TB.Fatalf("create %s: %d %s", external, r.Status, r.Body)
	}
	return r.JSON()["platform_account_number"].(string)
}

func (s *payStack) instruct(token, external, typ, reference string) testutil.Response {
	s.TB.Helper()
	return s.As(token, http.MethodPost, paymentPath, map[string]any{"import_supplier": "DEMO_ENERGY",
		"external_account_number": external, "vendor": "STRIPE", "reference": reference, "type": typ})
}

type storedInstruction struct {
	Reference, Type, Status, CardBrand, CardLast4, MandateStatus string
	CardExpMonth, CardExpYear                                    int
}

func (s *payStack) instructions(external string) []storedInstruction {
	s.TB.Helper()
	var rows []struct {
		Reference, Type, Status             string
		CardBrand, CardLast4, MandateStatus *string
		CardExpMonth, CardExpYear           *int
	}
	err := s.DB.Gorm().Raw(`SELECT reference, type, status, card_brand, card_last4, mandate_status, card_exp_month, card_exp_year
		FROM payment_instructions pi JOIN accounts a ON a.id = pi.account_id
		WHERE a.external_account_number = ? ORDER BY pi.id`, external).Scan(&rows).Error
	if err != nil {
		s.TB.Fatal(err)
	}
	out := make([]storedInstruction, len(rows))
	for i, r := range rows {
		out[i] = storedInstruction{Reference: r.Reference, Type: r.Type, Status: r.Status}
		if r.CardBrand != nil {
			out[i].CardBrand, out[i].CardLast4, out[i].CardExpMonth, out[i].CardExpYear = *r.CardBrand, *r.CardLast4, *r.CardExpMonth, *r.CardExpYear
		}
		if r.MandateStatus != nil {
			out[i].MandateStatus = *r.MandateStatus
		}
	}
	return out
}

func wantCreated(t *testing.T, r testutil.Response, number, reference string) {
	t.Helper()
	if r.Status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if body := r.JSON(); len(body) != 2 || body["platform_account_number"] != number || body["reference"] != reference {
		t.Fatalf("body %s", r.Body)
	}
}

func wantError(t *testing.T, r testutil.Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	body := r.JSON()
	if body["code"] != code || body["detail"] == "" {
		t.Fatalf("code %v, want %s: %s", body["code"], code, r.Body)
	}
	return body
}

// wantVendorUnavailable checks the "do not retry unchanged" 400 of CONTRACT §7.
func wantVendorUnavailable(t *testing.T, r testutil.Response, external, reference string) {
	t.Helper()
	body := wantError(t, r, http.StatusBadRequest, dataimport.CodePaymentVendorUnavailable)
	keys := slices.Sorted(maps.Keys(body))
	if !slices.Equal(keys, []string{"code", "detail", "error_detail", "external_account_number", "import_supplier", "reference"}) {
		t.Fatalf("fields %v: %s", keys, r.Body)
	}
	if body["external_account_number"] != external || body["import_supplier"] != "DEMO_ENERGY" || body["reference"] != reference || body["error_detail"] == "" {
		t.Fatalf("body %s", r.Body)
	}
}

func TestPaymentInstructions(t *testing.T) {
	t.Parallel()
	s := newPayStack(t)
	n1 := s.imported("EXT-1")

	// CARD: verified at stripe-mock, stored with the card's details.
	wantCreated(t, s.instruct(s.token, "EXT-1", "CARD", "pm_card_visa"), n1, "pm_card_visa")
	want := []storedInstruction{{Reference: "pm_card_visa", Type: "CARD", Status: "ACTIVE", CardBrand: "visa", CardLast4: "4242", CardExpMonth: 8, CardExpYear: 2030}}
	if got := s.instructions("EXT-1"); !slices.Equal(got, want) {
		t.Fatalf("stored %+v", got)
	}
	// Retry of a request that succeeded: 201 again, one row, vendor not asked again.
	hits := s.proxy.Hits()
	wantCreated(t, s.instruct(s.token, "EXT-1", "CARD", "pm_card_visa"), n1, "pm_card_visa")
	if got := s.instructions("EXT-1"); !slices.Equal(got, want) || s.proxy.Hits() != hits {
		t.Fatalf("retry: stored %+v, %d vendor calls", got, s.proxy.Hits()-hits)
	}
	// Another instruction while one is active.
	wantError(t, s.instruct(s.token, "EXT-1", "CARD", "pm_other"), http.StatusBadRequest, dataimport.CodeAccountHasActiveInstruction)
	wantError(t, s.instruct(s.token, "EXT-1", "DIRECT_DEBIT", "pm_card_visa"), http.StatusBadRequest, dataimport.CodeAccountHasActiveInstruction)
	if got := s.instructions("EXT-1"); len(got) != 1 {
		t.Fatalf("stored %+v", got)
	}

	// DIRECT_DEBIT: a Mandate, stored with its status.
	n2 := s.imported("EXT-2")
	wantCreated(t, s.instruct(s.token, "EXT-2", "DIRECT_DEBIT", "mandate_1"), n2, "mandate_1")
	if got := s.instructions("EXT-2"); !slices.Equal(got, []storedInstruction{{Reference: "mandate_1", Type: "DIRECT_DEBIT", Status: "ACTIVE", MandateStatus: "active"}}) {
		t.Fatalf("stored %+v", got)
	}

	// Concurrent identical requests: all 201, one row (the database decides).
	n3 := s.imported("EXT-3")
	var wg sync.WaitGroup
	results := make([]testutil.Response, 8)
	for i := range results {
		wg.Go(func() { results[i] = s.instruct(s.token, "EXT-3", "CARD", "pm_same") })
	}
	wg.Wait()
	for _, r := range results {
		wantCreated(t, r, n3, "pm_same")
	}
	if got := s.instructions("EXT-3"); len(got) != 1 {
		t.Fatalf("concurrent: stored %+v", got)
	}
	// Concurrent different requests: exactly one wins, the others are told why.
	s.imported("EXT-4")
	refs := []string{"pm_a", "pm_b", "pm_c", "pm_d", "pm_e", "pm_f"}
	results = make([]testutil.Response, len(refs))
	for i, ref := range refs {
		wg.Go(func() { results[i] = s.instruct(s.token, "EXT-4", "CARD", ref) })
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		switch {
		case r.Status == http.StatusCreated:
			created++
		case r.Status != http.StatusBadRequest || r.JSON()["code"] != dataimport.CodeAccountHasActiveInstruction:
			t.Fatalf("racing instruction: %d %s", r.Status, r.Body)
		}
	}
	if got := s.instructions("EXT-4"); created != 1 || len(got) != 1 {
		t.Fatalf("racing: %d created, stored %+v", created, got)
	}

	// The vendor says the reference does not exist.
	n5 := s.imported("EXT-5")
	s.proxy.FailNext(1, testutil.StripeMissing)
	wantError(t, s.instruct(s.token, "EXT-5", "CARD", "pm_missing"), http.StatusBadRequest, dataimport.CodePaymentInstructionNotFound)
	// The vendor refuses our credentials: persistent, not retried.
	s.proxy.FailNext(1, testutil.StripeUnauthorized)
	hits = s.proxy.Hits()
	wantVendorUnavailable(t, s.instruct(s.token, "EXT-5", "CARD", "pm_x"), "EXT-5", "pm_x")
	if n := s.proxy.Hits() - hits; n != 1 {
		t.Fatalf("credentials refused: %d vendor calls", n)
	}
	if got := s.instructions("EXT-5"); len(got) != 0 {
		t.Fatalf("stored %+v", got)
	}
	wantCreated(t, s.instruct(s.token, "EXT-5", "CARD", "pm_x"), n5, "pm_x")

	// Accounts that do not exist (yet): 404.
	wantError(t, s.instruct(s.token, "EXT-NOPE", "CARD", "pm_1"), http.StatusNotFound, dataimport.CodeNotFound)
	s.stage("EXT-STAGED")
	wantError(t, s.instruct(s.token, "EXT-STAGED", "CARD", "pm_1"), http.StatusNotFound, dataimport.CodeNotFound)
	r := s.As(s.token, http.MethodPost, paymentPath, map[string]any{"import_supplier": "NO_SUCH", "external_account_number": "EXT-1",
		"vendor": "STRIPE", "reference": "pm_1", "type": "CARD"})
	wantError(t, r, http.StatusNotFound, dataimport.CodeNotFound)

	// Tenant isolation: another organisation's account looks like an unknown one.
	s.Supplier("OTHER_ENERGY")
	other := s.Tenant("Other Partner", "OTHER_ENERGY")
	unknown := s.instruct(s.token, "EXT-NOPE", "CARD", "pm_1")
	foreign := s.instruct(other.Token, "EXT-1", "CARD", "pm_card_visa")
	wantError(t, foreign, http.StatusNotFound, dataimport.CodeNotFound)
	if string(foreign.Body) != string(unknown.Body) {
		t.Fatalf("foreign %s differs from unknown %s", foreign.Body, unknown.Body)
	}

	// Validation: all errors at once; vendor must be a configured one.
	r = s.As(s.token, http.MethodPost, paymentPath, `{"import_supplier": "DEMO_ENERGY", "external_account_number": "EXT-1", "vendor": "PAYPAL", "type": "CHEQUE", "iban": "x"}`)
	wantError(t, r, http.StatusBadRequest, dataimport.CodeInvalidPayload)
	var body struct{ Errors []dataimport.FieldError }
	r.Decode(&body)
	got := map[string]string{}
	for _, e := range body.Errors {
		got[e.Attr] = e.Code
	}
	if !maps.Equal(got, map[string]string{"vendor": "invalid_choice", "type": "invalid_choice", "reference": "required", "iban": "unknown_field"}) {
		t.Fatalf("field errors %v", got)
	}

	// A paused supplier: 400, before the vendor is asked.
	if err := s.DB.SetSupplierStatus(context.Background(), "DEMO_ENERGY", dataimport.SupplierPaused); err != nil {
		t.Fatal(err)
	}
	hits = s.proxy.Hits()
	wantError(t, s.instruct(s.token, "EXT-2", "CARD", "pm_new"), http.StatusBadRequest, dataimport.CodeSupplierNotOngoing)
	if s.proxy.Hits() != hits {
		t.Fatal("the vendor was asked for a paused supplier")
	}
}

func TestPaymentInstructionVendorFailures(t *testing.T) {
	t.Parallel()
	s := newPayStack(t)
	n1 := s.imported("EXT-1")
	s.imported("EXT-2")

	// One 503, then success: retried inside the request.
	s.proxy.FailNext(1, testutil.StripeUnavailable)
	hits := s.proxy.Hits()
	wantCreated(t, s.instruct(s.token, "EXT-1", "CARD", "pm_1"), n1, "pm_1")
	if n := s.proxy.Hits() - hits; n != 2 {
		t.Fatalf("%d vendor calls, want 2", n)
	}
	if got := s.instructions("EXT-1"); len(got) != 1 || got[0].CardLast4 != "4242" {
		t.Fatalf("stored %+v", got)
	}

	// 503 on every try: 3 tries within the budget, then 500 (retry as is).
	s.proxy.FailAlways(testutil.StripeUnavailable)
	hits = s.proxy.Hits()
	start := time.Now()
	wantError(t, s.instruct(s.token, "EXT-2", "CARD", "pm_2"), http.StatusInternalServerError, dataimport.CodeServerError)
	if n, took := s.proxy.Hits()-hits, time.Since(start); n != 3 || took > 8*time.Second {
		t.Fatalf("%d vendor calls in %v, want 3 within the 5s budget", n, took)
	}

	// The vendor keeps failing: the circuit breaker opens, and partners get
	// the 400 that says not to retry unchanged.
	var r testutil.Response
	for range 3 {
		if r = s.instruct(s.token, "EXT-2", "CARD", "pm_2"); r.Status == http.StatusBadRequest {
			break
		}
		wantError(t, r, http.StatusInternalServerError, dataimport.CodeServerError)
	}
	wantVendorUnavailable(t, r, "EXT-2", "pm_2")
	// Open: answered at once, without calling the vendor.
	hits = s.proxy.Hits()
	start = time.Now()
	wantVendorUnavailable(t, s.instruct(s.token, "EXT-2", "DIRECT_DEBIT", "mandate_2"), "EXT-2", "mandate_2")
	if n, took := s.proxy.Hits()-hits, time.Since(start); n != 0 || took > 2*time.Second {
		t.Fatalf("open breaker: %d vendor calls, %v", n, took)
	}
	if got := s.instructions("EXT-2"); len(got) != 0 {
		t.Fatalf("stored %+v", got)
	}
	// Idempotent retries of what succeeded still work: no vendor call needed.
	wantCreated(t, s.instruct(s.token, "EXT-1", "CARD", "pm_1"), n1, "pm_1")
}

func TestPaymentInstructionSlowVendor(t *testing.T) {
	t.Parallel()
	s := newPayStack(t)
	s.imported("EXT-1")
	s.proxy.FailAlways(testutil.Fault{Delay: 30 * time.Second})
	start := time.Now()
	r := s.instruct(s.token, "EXT-1", "CARD", "pm_slow")
	took := time.Since(start)
	wantError(t, r, http.StatusInternalServerError, dataimport.CodeServerError)
	t.Logf("slow vendor answered in %v after %d vendor calls", took, s.proxy.Hits())
	// Budget 5 s (2 s per call); the bound allows for a loaded machine.
	if took > 8*time.Second {
		t.Fatalf("took %v", took)
	}
	if n := s.proxy.Hits(); n < 2 || n > 3 {
		t.Fatalf("%d vendor calls", n)
	}
	if got := s.instructions("EXT-1"); len(got) != 0 {
		t.Fatalf("stored %+v", got)
	}
}
