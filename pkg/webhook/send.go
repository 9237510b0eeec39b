package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/gridshift/dataimport/pkg/storable"
)

// Limits of one delivery attempt.
const (
	// DefaultTimeout bounds an attempt from dial to the end of the body
	// read (WEBHOOK_TIMEOUT).
	DefaultTimeout = 10 * time.Second
	// ResponseLimit is how much of a response body is read (and kept, as an
	// excerpt, in the attempt log); the rest is not read at all.
	ResponseLimit = 4 << 10
	// ExcerptLimit is how much of it the attempt log keeps.
	ExcerptLimit = 512
)

// RotationOverlap is how long a rotated-out secret keeps signing beside its
// successor (CONTRACT §15): time for the receiver to deploy the new one.
const RotationOverlap = 24 * time.Hour

// SecretPrefix starts every signing secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// NewSecret draws a signing secret: whsec_ and 32 random bytes in base64,
// the form the specification's libraries accept.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:]), nil
}

// Outcome is what one attempt came to.
type Outcome struct {
	Status  int           // HTTP status; 0 when no response came
	Latency time.Duration // from sending to the end of the body read
	Err     error         // transport error, refusal or timeout
	Excerpt string        // the start of the response body
}

// Delivered reports a 2xx answer: the receiver has the event.
func (o Outcome) Delivered() bool { return o.Err == nil && o.Status >= 200 && o.Status < 300 }

// Gone reports a 410 answer: the receiver asks us to stop (the endpoint is
// disabled).
func (o Outcome) Gone() bool { return o.Err == nil && o.Status == http.StatusGone }

// ErrorText is the attempt's error for the log: the transport error, or
// the status of a non-2xx answer.
func (o Outcome) ErrorText() string {
	switch {
	case o.Err != nil:
		return o.Err.Error()
	case o.Delivered():
		return ""
	case o.Status >= 300 && o.Status < 400:
		return fmt.Sprintf("HTTP %d: redirects are not followed", o.Status)
	}
	return fmt.Sprintf("HTTP %d", o.Status)
}

// Sender signs and posts deliveries.
type Sender struct {
	client *http.Client
	now    func() time.Time
}

// NewSender builds the HTTP client every delivery goes through: the guard
// checks each dialled address, redirects are returned rather than
// followed, no proxy from the environment is used (it would dial for us,
// past the guard), and a whole attempt is bounded by timeout (<= 0:
// DefaultTimeout).
func NewSender(g Guard, timeout time.Duration) *Sender {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: min(5*time.Second, timeout), KeepAlive: 30 * time.Second, Control: g.Control}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   min(5*time.Second, timeout),
		ResponseHeaderTimeout: timeout,
	}
	return &Sender{now: time.Now, client: &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Send posts body to url signed with each of secrets as the Standard
// Webhooks specification says: webhook-id is the event id (receivers
// de-duplicate on it), webhook-timestamp the time of this attempt, and
// webhook-signature one signature per secret, space-separated (during a
// rotation's overlap a receiver holding either secret verifies it).
func (s *Sender) Send(ctx context.Context, url string, secrets []string, msgID string, body []byte) Outcome {
	at := s.now()
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return Outcome{Err: fmt.Errorf("signing secret: %w", err)}
		}
		sig, err := wh.Sign(msgID, at, body)
		if err != nil {
			return Outcome{Err: fmt.Errorf("sign: %w", err)}
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return Outcome{Err: errors.New("signing secret: none")}
	}
	sig := strings.Join(sigs, " ")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Outcome{Err: fmt.Errorf("request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "dataimport-webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, msgID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return Outcome{Latency: time.Since(start), Err: cleanErr(err)}
	}
	defer resp.Body.Close()
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, ResponseLimit))
	o := Outcome{Status: resp.StatusCode, Latency: time.Since(start), Excerpt: excerpt(raw)}
	if rerr != nil && !o.Delivered() {
		o.Err = fmt.Errorf("HTTP %d, reading the body: %w", resp.StatusCode, cleanErr(rerr))
	}
	return o
}

// cleanErr drops the url.Error wrapping (it repeats the URL the log shows
// anyway) but keeps the cause.
func cleanErr(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && strings.HasPrefix(err.Error(), "Post ") {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// excerpt is the start of a body as storable text (a receiver answering
// in UTF-16 sends NUL bytes).
func excerpt(b []byte) string { return storable.Bytes(b, ExcerptLimit) }
