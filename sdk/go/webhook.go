package sdk

import (
	"fmt"
	"net/http"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// VerifyWebhook checks a webhook delivery as the API signs it (Standard
// Webhooks: webhook-id, webhook-timestamp within five minutes, and
// webhook-signature, an HMAC-SHA256 of id.timestamp.body keyed with the
// endpoint's whsec_ secret), with the library the API signs with. body
// must be the request's bytes as received, before any JSON decoding.
// Deliver the event once per webhook-id: a retry carries the same id.
func VerifyWebhook(secret string, headers http.Header, body []byte) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return fmt.Errorf("sdk: webhook secret: %w", err)
	}
	if err := wh.Verify(body, headers); err != nil {
		return fmt.Errorf("sdk: webhook signature: %w", err)
	}
	return nil
}
