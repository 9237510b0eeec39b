package webhook_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/gridshift/dataimport/pkg/webhook"
)

func TestSendSignsWithTheSpecificationsLibrary(t *testing.T) {
	secret, err := webhook.NewSecret()
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q, %v", secret, err)
	}
	other, _ := webhook.NewSecret()
	verify, _ := standardwebhooks.NewWebhook(secret)
	wrong, _ := standardwebhooks.NewWebhook(other)
	var verified, refusedByOther atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verified.Store(verify.Verify(body, r.Header) == nil && r.Header.Get("webhook-id") == "evt_7")
		refusedByOther.Store(errors.Is(wrong.Verify(body, r.Header), standardwebhooks.ErrNoMatchingSignature))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	o := webhook.NewSender(webhook.Guard{AllowPrivate: true}, 0).Send(context.Background(), srv.URL, []string{secret}, "evt_7", []byte(`{"id":"evt_7"}`))
	if !o.Delivered() || o.Status != 204 || o.Err != nil {
		t.Fatalf("outcome %+v", o)
	}
	if !verified.Load() || !refusedByOther.Load() {
		t.Errorf("verified with the secret: %t; refused with another: %t", verified.Load(), refusedByOther.Load())
	}
}

// During a rotation's overlap an attempt carries a signature per secret: a
// receiver still on the old secret and one already on the new both verify.
func TestSendSignsWithEverySecretOfARotation(t *testing.T) {
	oldSecret, _ := webhook.NewSecret()
	newSecret, _ := webhook.NewSecret()
	stranger, _ := webhook.NewSecret()
	var results [3]atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for i, s := range []string{oldSecret, newSecret, stranger} {
			wh, _ := standardwebhooks.NewWebhook(s)
			results[i].Store(wh.Verify(body, r.Header) == nil)
		}
	}))
	defer srv.Close()
	o := webhook.NewSender(webhook.Guard{AllowPrivate: true}, 0).Send(context.Background(), srv.URL, []string{newSecret, oldSecret}, "evt_9", []byte(`{}`))
	if !o.Delivered() {
		t.Fatalf("outcome %+v", o)
	}
	if !results[0].Load() || !results[1].Load() || results[2].Load() {
		t.Errorf("verifies with old %t, new %t, a stranger's %t; want true, true, false", results[0].Load(), results[1].Load(), results[2].Load())
	}
}

func TestSendDoesNotFollowRedirectsAndReadsLittle(t *testing.T) {
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	defer big.Close()
	s := webhook.NewSender(webhook.Guard{AllowPrivate: true}, 0)
	secret, _ := webhook.NewSecret()

	o := s.Send(context.Background(), redirect.URL, []string{secret}, "evt_1", []byte(`{}`))
	if o.Delivered() || o.Status != http.StatusTemporaryRedirect || followed.Load() != 0 || !strings.Contains(o.ErrorText(), "redirects are not followed") {
		t.Errorf("redirect: %+v (followed %d)", o, followed.Load())
	}
	o = s.Send(context.Background(), big.URL, []string{secret}, "evt_1", []byte(`{}`))
	if o.Delivered() || o.Status != 503 || len(o.Excerpt) != webhook.ExcerptLimit {
		t.Errorf("big 503: status %d, excerpt %d bytes", o.Status, len(o.Excerpt))
	}
}

func TestSendRefusesPrivateAddressesAtDialTime(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	secret, _ := webhook.NewSecret()
	// The URL never passed CheckURL (as after DNS rebinding): the dialler
	// still refuses the loopback address.
	o := webhook.NewSender(webhook.Guard{}, 0).Send(context.Background(), srv.URL, []string{secret}, "evt_1", []byte(`{}`))
	if o.Err == nil || !errors.Is(o.Err, webhook.ErrRefusedTarget) || hits.Load() != 0 {
		t.Fatalf("outcome %+v, hits %d", o, hits.Load())
	}
}
