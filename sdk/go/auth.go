package sdk

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gridshift/dataimport/sdk/go/client"
)

const (
	obtainWithKey     = `mutation($v: String!) { obtainToken(input: {APIKey: $v}) { token refreshToken refreshExpiresIn } }`
	obtainWithRefresh = `mutation($v: String!) { obtainToken(input: {refreshToken: $v}) { token refreshToken refreshExpiresIn } }`
)

// renewBefore renews a token this long before its exp claim (or a tenth
// of its lifetime when that is shorter), so a request is not sent with a
// token that expires on the way.
const renewBefore = 30 * time.Second

// tokenSource holds the access token, obtains it from the API key and
// renews it with the refresh token (falling back to the key).
type tokenSource struct {
	api    *client.ClientWithResponses
	apiKey string
	now    func() time.Time

	mu         sync.Mutex
	token      string
	expires    time.Time // the token's exp claim; zero when unknown
	margin     time.Duration
	refresh    string
	refreshExp time.Time
	gen        int // bumped on every new token, so concurrent 401s renew once
}

// current returns a usable token and its generation.
func (t *tokenSource) current(ctx context.Context) (string, int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && (t.expires.IsZero() || t.clock().Add(t.margin).Before(t.expires)) {
		return t.token, t.gen, nil
	}
	if err := t.obtain(ctx); err != nil {
		return "", 0, err
	}
	return t.token, t.gen, nil
}

// renew replaces the token of generation gen (one the API refused); a
// token already replaced by another goroutine is kept.
func (t *tokenSource) renew(ctx context.Context, gen int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return nil
	}
	return t.obtain(ctx)
}

func (t *tokenSource) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// obtain gets a new pair, with the refresh token while it is valid, else
// (or when the API refuses it) with the API key. Called with mu held.
func (t *tokenSource) obtain(ctx context.Context) error {
	if t.refresh != "" && t.clock().Before(t.refreshExp) {
		err := t.exchange(ctx, obtainWithRefresh, t.refresh)
		if err == nil {
			return nil
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			return err
		}
	}
	return t.exchange(ctx, obtainWithKey, t.apiKey)
}

func (t *tokenSource) exchange(ctx context.Context, query, v string) error {
	vars := map[string]any{"v": v}
	resp, err := t.api.ObtainTokenWithResponse(ctx, client.ObtainTokenJSONRequestBody{Query: query, Variables: &vars})
	if err != nil {
		return fmt.Errorf("sdk: obtain token: %w", err)
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return fmt.Errorf("sdk: obtain token: %w", err)
	}
	out := resp.JSON200
	if out == nil {
		return fmt.Errorf("sdk: obtain token: unexpected answer %d", resp.StatusCode())
	}
	if out.Errors != nil && len(*out.Errors) > 0 {
		e := (*out.Errors)[0]
		code := "graphql_error"
		if e.Extensions != nil && e.Extensions.ErrorCode != nil {
			code = *e.Extensions.ErrorCode
		}
		// The API refused the key or refresh token: a 200 carrying a
		// GraphQL error, reported like any other refusal (as a 401).
		return fmt.Errorf("sdk: obtain token: %w", &APIError{StatusCode: http.StatusUnauthorized, Code: code, Detail: e.Message,
			RequestID: resp.HTTPResponse.Header.Get("X-Request-ID"), Body: resp.Body})
	}
	if out.Data == nil || out.Data.ObtainToken == nil || out.Data.ObtainToken.Token == nil {
		return errors.New("sdk: obtain token: the answer has no token")
	}
	ot := out.Data.ObtainToken
	t.token, t.expires = *ot.Token, jwtExpiry(*ot.Token)
	t.margin = min(renewBefore, t.expires.Sub(t.clock())/10)
	t.refresh, t.refreshExp = "", time.Time{}
	if ot.RefreshToken != nil && ot.RefreshExpiresIn != nil {
		t.refresh, t.refreshExp = *ot.RefreshToken, time.Unix(int64(*ot.RefreshExpiresIn), 0)
	}
	t.gen++
	return nil
}

// jwtExpiry reads the exp claim of a JWT without verifying it (the API
// does that); zero when there is none.
func jwtExpiry(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil || claims.Exp == 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}

// maxRenewals bounds the token renewals of one request: a request that
// waits out 429s longer than a token lives can find its token expired more
// than once, but a token refused right after it was issued means the API
// will not take it.
const maxRenewals = 3

// authDoer sends every request but the token's own with the access token,
// and renews it (then sends the request again, with the same
// Idempotency-Key) when the API answers 401 token_expired or
// authentication_failed, at most maxRenewals times.
type authDoer struct {
	next   *retryDoer
	tokens *tokenSource
}

func (d *authDoer) Do(req *http.Request) (*http.Response, error) {
	if isGraphQL(req) {
		return d.next.Do(req)
	}
	ctx := req.Context()
	for renewals := 0; ; renewals++ {
		tok, gen, err := d.tokens.current(ctx)
		if err != nil {
			return nil, err
		}
		try := req
		if renewals > 0 {
			try = req.Clone(ctx)
			if req.GetBody != nil {
				if try.Body, err = req.GetBody(); err != nil {
					return nil, fmt.Errorf("sdk: %w", err)
				}
			}
		}
		try.Header.Set("Authorization", "Token "+tok)
		resp, err := d.next.Do(try)
		if err != nil || resp.StatusCode != http.StatusUnauthorized || renewals == maxRenewals ||
			req.GetBody == nil && req.Body != nil && req.Body != http.NoBody {
			return resp, err
		}
		switch envelopeCode(resp) {
		case "token_expired", "authentication_failed":
		default:
			return resp, nil
		}
		_ = resp.Body.Close()
		if err := d.tokens.renew(ctx, gen); err != nil {
			return nil, err
		}
	}
}
