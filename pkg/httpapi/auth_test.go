package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const obtainByKey = `mutation($k: String!) { obtainToken(input: {APIKey: $k}) { token refreshToken refreshExpiresIn } }`

func statusPath(supplier, external string) string {
	return "/v1/data-import/account-transfer-status/" + supplier + "/" + external + "/"
}

func TestObtainTokenAndUseIt(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("ACME")
	ten := st.Tenant("Acme Partner", "ACME")

	// The token from obtainToken reaches a data-import route (404: no such account yet, but authenticated).
	for _, header := range []string{"Token " + ten.Token, ten.Token, "Bearer " + ten.Token} {
		r := st.Request(http.MethodGet, statusPath("ACME", "X1"), nil, "Authorization", header)
		if r.Status != http.StatusNotFound || r.JSON()["code"] != "not_found" {
			t.Fatalf("header %q: got %d %s", header[:8], r.Status, r.Body)
		}
	}

	// Refresh token gives a new working access token.
	r := st.GraphQL(obtainByKey, map[string]any{"k": ten.APIKey})
	var out struct {
		Data struct {
			ObtainToken struct {
				Token            string
				RefreshToken     string
				RefreshExpiresIn int64
			} `json:"obtainToken"`
		}
	}
	r.Decode(&out)
	if out.Data.ObtainToken.RefreshExpiresIn < time.Now().Add(24*time.Hour).Unix() {
		t.Fatalf("refreshExpiresIn %d is not a future unix time", out.Data.ObtainToken.RefreshExpiresIn)
	}
	r = st.GraphQL(`mutation($r: String!) { obtainToken(input: {refreshToken: $r}) { token } }`,
		map[string]any{"r": out.Data.ObtainToken.RefreshToken})
	var refreshed struct {
		Data struct {
			ObtainToken struct{ Token string } `json:"obtainToken"`
		}
	}
	r.Decode(&refreshed)
	if refreshed.Data.ObtainToken.Token == "" {
		t.Fatalf("refresh gave no token: %s", r.Body)
	}
	if got := st.As(refreshed.Data.ObtainToken.Token, http.MethodGet, statusPath("ACME", "X1"), nil); got.Status != http.StatusNotFound {
		t.Fatalf("refreshed token: %d %s", got.Status, got.Body)
	}
	// A refresh token is not an access token.
	if got := st.As(out.Data.ObtainToken.RefreshToken, http.MethodGet, statusPath("ACME", "X1"), nil); got.Status != http.StatusUnauthorized {
		t.Fatalf("refresh token used as access token: %d", got.Status)
	}
}

func TestAuthFailures(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("ACME")
	ten := st.Tenant("Acme Partner", "ACME")
	ctx := context.Background()
	secret, err := st.DB.TokenSecret(ctx, "unused-candidate")
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.DB.APIKeyByHash(ctx, auth.HashAPIKey(ten.APIKey))
	if err != nil {
		t.Fatal(err)
	}
	past := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	expired, err := auth.NewIssuer(secret, time.Minute, time.Minute, past).Issue(key.OrganisationID, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	otherSecret, err := auth.NewIssuer(strings.Repeat("x", 48), time.Hour, time.Hour, nil).Issue(key.OrganisationID, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	tampered := ten.Token[:len(ten.Token)-4] + flip(ten.Token[len(ten.Token)-4:])
	// alg:none with the same claims.
	parts := strings.Split(ten.Token, ".")
	algNone := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."

	cases := []struct {
		name   string
		header string
		code   string
	}{
		{"missing header", "", "not_authenticated"},
		{"empty token", "Token ", "not_authenticated"},
		{"garbage", "Token abc.def.ghi", "authentication_failed"},
		{"tampered", "Token " + tampered, "authentication_failed"},
		{"wrong secret", "Token " + otherSecret.Token, "authentication_failed"},
		{"alg none", "Token " + algNone, "authentication_failed"},
		{"expired", "Token " + expired.Token, "token_expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := st.Request(http.MethodGet, statusPath("ACME", "X1"), nil, "Authorization", tc.header)
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, body %s", r.Status, r.Body)
			}
			body := r.JSON()
			if body["code"] != tc.code || body["detail"] == "" {
				t.Fatalf("body %s, want code %s", r.Body, tc.code)
			}
		})
	}

	// Bad API key: a GraphQL error with extensions.errorCode.
	r := st.GraphQL(obtainByKey, map[string]any{"k": "dik_00000000_nope"})
	var gq struct {
		Data   map[string]any
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	r.Decode(&gq)
	if r.Status != http.StatusOK || len(gq.Errors) != 1 || gq.Errors[0].Extensions["errorCode"] != "invalid_api_key" {
		t.Fatalf("bad key: %d %s", r.Status, r.Body)
	}

	// Revoking the key ends its tokens at once.
	if err := st.DB.RevokeAPIKey(ctx, ten.Prefix); err != nil {
		t.Fatal(err)
	}
	if r := st.As(ten.Token, http.MethodGet, statusPath("ACME", "X1"), nil); r.Status != http.StatusUnauthorized || r.JSON()["code"] != "authentication_failed" {
		t.Fatalf("revoked key's token: %d %s", r.Status, r.Body)
	}
	r = st.GraphQL(obtainByKey, map[string]any{"k": ten.APIKey})
	r.Decode(&gq)
	if len(gq.Errors) != 1 || gq.Errors[0].Extensions["errorCode"] != "invalid_api_key" {
		t.Fatalf("revoked key still obtains tokens: %s", r.Body)
	}
}

func flip(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
	}
	return string(b)
}

func TestObtainTokenBruteForceThrottled(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("ACME")
	ten := st.Tenant("Acme Partner", "ACME")
	testutil.FailUntilThrottled(t, 10, func(i int) bool {
		r := st.GraphQL(obtainByKey, map[string]any{"k": "dik_bad_" + strconv.Itoa(i)})
		if r.Status != http.StatusOK && r.Status != http.StatusTooManyRequests {
			t.Fatalf("failure %d answered %d before the limit", i+1, r.Status)
		}
		return r.Status == http.StatusTooManyRequests
	})
	r := st.GraphQL(obtainByKey, map[string]any{"k": "dik_bad_again"})
	if r.Status != http.StatusTooManyRequests || r.JSON()["code"] != "throttled" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("11th failure: %d %s (Retry-After %q)", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	// Even the right key waits while the client is throttled: that is what
	// makes guessing slow.
	if r := st.GraphQL(obtainByKey, map[string]any{"k": ten.APIKey}); r.Status != http.StatusTooManyRequests {
		t.Fatalf("throttled client got %d", r.Status)
	}
}

func TestTenantIsolation(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("ALPHA")
	st.Supplier("BRAVO")
	a := st.Tenant("Alpha Org", "ALPHA")
	st.Tenant("Bravo Org", "BRAVO")
	if err := st.DB.MarkSkipped(context.Background(), "BRAVO", "B-1"); err != nil {
		t.Fatal(err)
	}
	// B's existing account and a supplier that does not exist answer alike.
	foreign := st.As(a.Token, http.MethodGet, statusPath("BRAVO", "B-1"), nil)
	missing := st.As(a.Token, http.MethodGet, statusPath("NOPE", "B-1"), nil)
	if foreign.Status != http.StatusNotFound || foreign.Status != missing.Status || string(foreign.Body) != string(missing.Body) {
		t.Fatalf("foreign %d %s vs missing %d %s", foreign.Status, foreign.Body, missing.Status, missing.Body)
	}
}

func TestAPIKeysStoredHashed(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("ACME")
	ten := st.Tenant("Acme Partner", "ACME")
	var n int64
	secret := ten.APIKey[strings.LastIndex(ten.APIKey, "_")+1:]
	err := st.DB.Gorm().Raw(`SELECT count(*) FROM api_keys WHERE encode(key_hash, 'escape') LIKE ? OR encode(key_hash, 'hex') LIKE ? OR prefix LIKE ?`,
		"%"+secret+"%", "%"+secret+"%", "%"+secret+"%").Scan(&n).Error
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	st.DB.Gorm().Raw(`SELECT count(*) FROM api_keys`).Scan(&rows)
	if rows != 1 || n != 0 {
		t.Fatalf("api_keys rows %d, rows containing the secret %d", rows, n)
	}
	// Neither the key nor the token appear in the logs.
	if strings.Contains(st.Logs.String(), secret) || strings.Contains(st.Logs.String(), ten.Token) {
		t.Fatal("a secret was written to the logs")
	}
}

// Guesses packed into one request under aliases count one by one.
func TestObtainTokenAliasesCountEachGuess(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("ACME")
	ten := st.Tenant("Acme Partner", "ACME")
	var q strings.Builder
	q.WriteString("mutation {")
	for i := range 12 {
		fmt.Fprintf(&q, ` g%d: obtainToken(input: {APIKey: "dik_bad_%d"}) { token }`, i, i)
	}
	q.WriteString(" }")
	if r := st.GraphQL(q.String(), nil); r.Status != http.StatusOK {
		t.Fatalf("aliased guesses: %d %s", r.Status, r.Body)
	}
	if r := st.GraphQL(obtainByKey, map[string]any{"k": ten.APIKey}); r.Status != http.StatusTooManyRequests {
		t.Fatalf("after 12 guesses in one request the client got %d", r.Status)
	}
}
