package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestTokenClockSkew: tokens minted by a replica whose clock runs 3 s ahead
// of the API's work for data-import requests and for refreshing; 60 s ahead
// they are refused (authentication_failed), like expired ones (token_expired).
func TestTokenClockSkew(t *testing.T) {
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
	mint := func(offset, ttl time.Duration) auth.TokenPair {
		t.Helper()
		p, err := auth.NewIssuer(secret, ttl, ttl, func() time.Time { return time.Now().Add(offset) }).Issue(key.OrganisationID, key.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	refresh := `mutation($r: String!) { obtainToken(input: {refreshToken: $r}) { token } }`

	ahead := mint(3*time.Second, time.Hour)
	if r := st.As(ahead.Token, http.MethodGet, statusPath("ACME", "X1"), nil); r.Status != http.StatusNotFound {
		t.Fatalf("token minted 3 s ahead: %d %s", r.Status, r.Body)
	}
	var out struct {
		Data struct {
			ObtainToken *struct{ Token string } `json:"obtainToken"`
		}
	}
	st.GraphQL(refresh, map[string]any{"r": ahead.RefreshToken}).Decode(&out)
	if out.Data.ObtainToken == nil || out.Data.ObtainToken.Token == "" {
		t.Fatal("refresh token minted 3 s ahead was refused")
	}

	farAhead := mint(time.Minute, time.Hour)
	if r := st.As(farAhead.Token, http.MethodGet, statusPath("ACME", "X1"), nil); r.Status != http.StatusUnauthorized || r.JSON()["code"] != "authentication_failed" {
		t.Fatalf("token minted 60 s ahead: %d %s", r.Status, r.Body)
	}
	out.Data.ObtainToken = nil
	st.GraphQL(refresh, map[string]any{"r": farAhead.RefreshToken}).Decode(&out)
	if out.Data.ObtainToken != nil {
		t.Fatal("refresh token minted 60 s ahead was accepted")
	}

	expired := mint(-time.Minute-auth.ClockSkew-2*time.Second, time.Minute)
	if r := st.As(expired.Token, http.MethodGet, statusPath("ACME", "X1"), nil); r.Status != http.StatusUnauthorized || r.JSON()["code"] != "token_expired" {
		t.Fatalf("token expired beyond the leeway: %d %s", r.Status, r.Body)
	}
}
