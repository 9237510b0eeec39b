// Package stripevendor is the Stripe adapter of payments.Vendor, on
// stripe-go: CARD references are PaymentMethods, DIRECT_DEBIT references
// are Mandates. It makes exactly one HTTP call per Verify (stripe-go's own
// retries are off: payments.Resilient owns the retry budget) and classifies
// every failure.
package stripevendor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/payments"
)

// Name is the vendor name partners send.
const Name = "STRIPE"

// Config says how to reach Stripe.
type Config struct {
	APIKey string
	// URL of the API; empty means Stripe's own. Tests point it at stripe-mock.
	URL string
	// CallTimeout bounds each HTTP call (connect, wait, read). Default 2 s.
	CallTimeout time.Duration
	// Transport is the HTTP transport; nil means a clone of the default.
	Transport http.RoundTripper
}

// Vendor is the Stripe adapter.
type Vendor struct {
	client *stripe.Client
}

// New builds the adapter; it makes no call.
func New(cfg Config) *Vendor {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 2 * time.Second
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	bc := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: cfg.CallTimeout, Transport: statusRecorder{base: base}},
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull}, // we log classified errors ourselves
	}
	if cfg.URL != "" {
		bc.URL = stripe.String(cfg.URL)
	}
	return &Vendor{client: stripe.NewClient(cfg.APIKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))}
}

// Verify retrieves the PaymentMethod (CARD) or Mandate (DIRECT_DEBIT).
func (v *Vendor) Verify(ctx context.Context, typ dataimport.PaymentInstructionType, reference string) (dataimport.PaymentDetails, error) {
	var status int
	ctx = context.WithValue(ctx, statusKey{}, &status)
	switch typ {
	case dataimport.PaymentCard:
		pm, err := v.client.V1PaymentMethods.Retrieve(ctx, reference, nil)
		if err != nil {
			return dataimport.PaymentDetails{}, classify(ctx, err, status, "PaymentMethod", reference)
		}
		if pm.Card == nil {
			return dataimport.PaymentDetails{}, payments.Errorf(payments.KindRejected, nil,
				"Stripe PaymentMethod %s is a %s, not a card.", reference, pm.Type)
		}
		return dataimport.PaymentDetails{CardBrand: string(pm.Card.Brand), CardLast4: pm.Card.Last4,
			CardExpMonth: int(pm.Card.ExpMonth), CardExpYear: int(pm.Card.ExpYear)}, nil
	case dataimport.PaymentDirectDebit:
		m, err := v.client.V1Mandates.Retrieve(ctx, reference, nil)
		if err != nil {
			return dataimport.PaymentDetails{}, classify(ctx, err, status, "Mandate", reference)
		}
		if m.Status == stripe.MandateStatusInactive {
			return dataimport.PaymentDetails{}, payments.Errorf(payments.KindRejected, nil,
				"Stripe Mandate %s is inactive: it cannot be used for payments.", reference)
		}
		return dataimport.PaymentDetails{MandateStatus: string(m.Status)}, nil
	}
	return dataimport.PaymentDetails{}, payments.Errorf(payments.KindRejected, nil, "Stripe does not support %s instructions.", typ)
}

// classify turns a stripe-go or transport error into a payments.Error. The
// status recorded by the transport covers error bodies stripe-go cannot
// parse (an HTML 502 from a load balancer).
func classify(ctx context.Context, err error, status int, object, reference string) error {
	var se *stripe.Error
	code := stripe.ErrorCode("")
	if errors.As(err, &se) {
		status, code = se.HTTPStatusCode, se.Code
	}
	if status == 0 && errors.Is(ctx.Err(), context.Canceled) {
		return err // the caller left: not the vendor's doing, not classified
	}
	switch {
	case status == http.StatusNotFound || code == stripe.ErrorCodeResourceMissing:
		return payments.Errorf(payments.KindNotFound, err, "Stripe has no %s %s.", object, reference)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return payments.Errorf(payments.KindPersistent, err, "Stripe refused our credentials (HTTP %d).", status)
	case status == http.StatusTooManyRequests || status >= 500:
		return payments.Errorf(payments.KindTransient, err, "Stripe answered HTTP %d.", status)
	case status >= 400:
		return payments.Errorf(payments.KindRejected, err, "Stripe refused to look up %s %s (HTTP %d).", object, reference, status)
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return payments.Errorf(payments.KindTransient, err, "Stripe did not answer in time or could not be reached.")
	}
	// A 2xx we could not read, or a failure before the request left.
	return payments.Errorf(payments.KindTransient, err, "Unexpected answer from Stripe.")
}

type statusKey struct{}

// statusRecorder notes the HTTP status of the response in the request's
// context, so classify sees it even when stripe-go cannot parse the body.
type statusRecorder struct{ base http.RoundTripper }

func (t statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if p, ok := r.Context().Value(statusKey{}).(*int); ok && resp != nil {
		*p = resp.StatusCode
	}
	return resp, err
}

var _ payments.Vendor = (*Vendor)(nil)
