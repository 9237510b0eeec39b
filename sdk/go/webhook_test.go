package sdk_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	sdk "github.com/gridshift/dataimport/sdk/go"
)

// A delivery signed as the API signs it verifies; every way it can be
// wrong (body, secret, id, a stale timestamp, a missing header) is refused.
func TestVerifyWebhook(t *testing.T) {
	const secret, other = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2VjcmV0LXRoYXQtaXMtbm90LXRoZS1zYW1l"
	body := []byte(`{"id":"evt_1","type":"import_process.complete-v1"}`)
	sign := func(id string, at time.Time) http.Header {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(id, at, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
		h.Set("webhook-signature", sig)
		return h
	}
	now := time.Now()
	if err := sdk.VerifyWebhook(secret, sign("evt_1", now), body); err != nil {
		t.Fatalf("a good delivery: %v", err)
	}
	// During a rotation the API signs with both secrets, space-separated.
	rotating := sign("evt_1", now)
	rotating.Set("webhook-signature", "v1,"+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="+" "+rotating.Get("webhook-signature"))
	if err := sdk.VerifyWebhook(secret, rotating, body); err != nil {
		t.Fatalf("the second of two signatures: %v", err)
	}
	otherID := sign("evt_1", now)
	otherID.Set("webhook-id", "evt_2")
	noSig := sign("evt_1", now)
	noSig.Del("webhook-signature")
	for name, tc := range map[string]struct {
		secret string
		h      http.Header
		body   []byte
	}{
		"altered body": {secret, sign("evt_1", now), append([]byte(nil), append(body, ' ')...)},
		"other secret": {other, sign("evt_1", now), body},
		"other id":     {secret, otherID, body},
		"stale":        {secret, sign("evt_1", now.Add(-10*time.Minute)), body},
		"no signature": {secret, noSig, body},
		"not a secret": {"whsec_!!!", sign("evt_1", now), body},
	} {
		if err := sdk.VerifyWebhook(tc.secret, tc.h, tc.body); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}
