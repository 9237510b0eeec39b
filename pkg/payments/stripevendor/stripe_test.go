package stripevendor_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/payments"
	"github.com/gridshift/dataimport/pkg/payments/stripevendor"
	"github.com/gridshift/dataimport/pkg/testutil"
)

func TestStripeAdapter(t *testing.T) {
	mock := testutil.NewStripeMock(t)
	proxy := testutil.NewFaultProxy(t, mock.URL)
	v := stripevendor.New(stripevendor.Config{APIKey: testutil.StripeTestKey, URL: proxy.URL, CallTimeout: 500 * time.Millisecond})
	ctx := context.Background()

	t.Run("card", func(t *testing.T) {
		d, err := v.Verify(ctx, dataimport.PaymentCard, "pm_1NvCard")
		if err != nil {
			t.Fatal(err)
		}
		// stripe-mock's PaymentMethod fixture.
		if d.CardBrand != "visa" || d.CardLast4 != "4242" || d.CardExpMonth != 8 || d.CardExpYear != 2030 || d.MandateStatus != "" {
			t.Fatalf("details %+v", d)
		}
	})
	t.Run("direct debit", func(t *testing.T) {
		d, err := v.Verify(ctx, dataimport.PaymentDirectDebit, "mandate_1NvDebit")
		if err != nil {
			t.Fatal(err)
		}
		if d.MandateStatus != "active" || d.CardLast4 != "" {
			t.Fatalf("details %+v", d)
		}
	})
	failures := []struct {
		name  string
		fault testutil.Fault
		kind  payments.Kind
	}{
		{"resource missing", testutil.StripeMissing, payments.KindNotFound},
		{"503", testutil.StripeUnavailable, payments.KindTransient},
		{"502 with an HTML body", testutil.Fault{Status: http.StatusBadGateway, Body: "<html>bad gateway</html>"}, payments.KindTransient},
		{"429", testutil.Fault{Status: http.StatusTooManyRequests, Body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`}, payments.KindTransient},
		{"401", testutil.StripeUnauthorized, payments.KindPersistent},
		{"403", testutil.Fault{Status: http.StatusForbidden, Body: `{"error":{"type":"invalid_request_error"}}`}, payments.KindPersistent},
		{"400", testutil.Fault{Status: http.StatusBadRequest, Body: `{"error":{"type":"invalid_request_error","code":"parameter_invalid_empty"}}`}, payments.KindRejected},
		{"slow answer", testutil.Fault{Delay: 5 * time.Second}, payments.KindTransient},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			proxy.FailNext(1, tc.fault)
			before := proxy.Hits()
			start := time.Now()
			_, err := v.Verify(ctx, dataimport.PaymentCard, "pm_1NvCard")
			if payments.KindOf(err) != tc.kind {
				t.Fatalf("got %v (kind %v), want %v", err, payments.KindOf(err), tc.kind)
			}
			if n := proxy.Hits() - before; n != 1 {
				t.Fatalf("%d HTTP calls: stripe-go must not retry on its own", n)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("took %v with a 500ms call timeout", took)
			}
		})
	}
	t.Run("credentials refused by stripe-mock itself", func(t *testing.T) {
		bad := stripevendor.New(stripevendor.Config{APIKey: "not-a-key", URL: mock.URL})
		if _, err := bad.Verify(ctx, dataimport.PaymentDirectDebit, "mandate_1"); payments.KindOf(err) != payments.KindPersistent {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		gone := stripevendor.New(stripevendor.Config{APIKey: testutil.StripeTestKey, URL: "http://127.0.0.1:1"})
		if _, err := gone.Verify(ctx, dataimport.PaymentCard, "pm_1"); payments.KindOf(err) != payments.KindTransient {
			t.Fatalf("got %v", err)
		}
	})
}
